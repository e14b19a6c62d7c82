/**
 * The rows of the second performance round (issue 17), measured in the main table's interleaved
 * rounds: the proxy hop between two moonhubs (direct and proxied in the same run), `tools/list`
 * with 1,000 and 10,000 tools as a share of bare, and the heap that 10,000 idle 2025 sessions
 * hold (outside the rounds: it is a size, not a rate).
 */
import { startHub, type Proc } from '../lib/proc.js';
import { newRow, type Row } from '../lib/rows.js';
import { echoCall, firstText, resultOf, send, spec } from '../lib/rpc.js';
import { runWrk } from '../lib/wrk.js';
import { measureSessionScale, toolsPlugin } from './scale.js';
import { startProxyHub, type ExtraRows, type Settings, type Target } from './throughput.js';

/** Row ids of this file; `hub-` so the CI guard (baselineOf) picks them up. */
export const ROUND2_ROWS = ['hub-proxied', 'hub-list-1k', 'hub-list-10k'] as const;

/** The rows, for measureThroughput's interleaved rounds. */
export function round2(): ExtraRows {
  const rows = round2Rows();
  return { rows, targets: (ctx) => round2Targets(rows, ctx) };
}

function round2Rows(): Row[] {
  return [
    // Against hub-2026: the same Lua echo on the same hub, called without the second hub.
    newRow('hub-proxied', 'moonhub → moonhub Lua echo (mcp.proxy), 2026-07-28', {
      ref: 'hub-2026',
      note: 'ratios against hub-2026, the upstream hub called directly',
    }),
    newRow('hub-list-1k', 'moonhub tools/list (first page of 100), 1,000 tools'),
    newRow('hub-list-10k', 'moonhub tools/list (first page of 100), 10,000 tools'),
  ];
}

interface Ctx {
  /** The hub serving the Lua echo (the hub-2026 row's process). */
  hub: Proc;
  settings: Settings;
  procs: Proc[];
  wanted: ReadonlySet<string>;
}

/** The targets of the rows in `rows` that are wanted; rows that cannot run get their n/a. */
async function round2Targets(rows: Row[], ctx: Ctx): Promise<Target[]> {
  const out: Target[] = [];
  for (const row of rows) {
    if (!ctx.wanted.has(row.id)) continue;
    try {
      const t =
        row.id === 'hub-proxied'
          ? await proxiedTarget(row, ctx)
          : await listTarget(row, row.id === 'hub-list-1k' ? 1000 : 10_000, ctx);
      if (t !== undefined) out.push(t);
    } catch (err) {
      row.na = `n/a: ${(err as Error).message.split('\n')[0]!.slice(0, 160)}`;
    }
  }
  return out;
}

function wrkTarget(row: Row, proc: Proc, s: ReturnType<typeof spec>, warmSeconds?: number) {
  return {
    row,
    proc,
    run: (seconds: number) => runWrk(s, { connections: row.connections, seconds }),
    ...(warmSeconds !== undefined ? { warmSeconds } : {}),
  };
}

async function proxiedTarget(row: Row, ctx: Ctx): Promise<Target | undefined> {
  const started = await startProxyHub(ctx.hub.url, ctx.settings.proxyWaitMs, ctx.procs);
  if (!('hub' in started)) {
    row.na = started.na;
    row.note = started.note;
    return undefined;
  }
  const s = echoCall(started.hub.url, 'modern', undefined, 'up.echo');
  const text = firstText(resultOf(await send(s, 1)));
  if (text !== 'hello') throw new Error(`proxied echo answered ${JSON.stringify(text)}`);
  // The upstream client's code needs seconds of load to reach its last JIT tier (hub-proxy).
  return wrkTarget(row, started.hub, s, 6);
}

async function listTarget(row: Row, tools: number, ctx: Ctx): Promise<Target> {
  const hub = await startHub(`moonhub-${tools}-tools`, {
    plugins: [toolsPlugin(tools)],
    watch: false,
  });
  ctx.procs.push(hub);
  const s = spec(hub.url, 'modern', 'tools/list', {});
  const listed = resultOf(await send(s, 1));
  const page = listed.tools as unknown[];
  if (page.length !== 100 || typeof listed.nextCursor !== 'string')
    throw new Error(`tools/list with ${tools} tools answered ${page.length} tools, no cursor`);
  return wrkTarget(row, hub, s);
}

/** Heap after a full GC that 10,000 idle 2025 sessions add to a hub holding one. */
export interface IdleSessions {
  sessions: number;
  heapMB: number;
  bytesPerSession: number;
  rssMB: number;
}

export async function measureIdleSessions(
  procs: Proc[],
  log: (line: string) => void,
  sessions = 10_000,
): Promise<IdleSessions> {
  const points = await measureSessionScale([1, sessions], 1, procs, log);
  const [one, all] = [points[0]!, points.at(-1)!];
  const heapMB = Math.round((all.heapUsedMB - one.heapUsedMB) * 10) / 10;
  log(`idle sessions: ${sessions} add ${heapMB} MB of heap (${all.heapBytesPerSession} B each)`);
  return {
    sessions,
    heapMB,
    bytesPerSession: all.heapBytesPerSession,
    rssMB: all.rssMB,
  };
}
