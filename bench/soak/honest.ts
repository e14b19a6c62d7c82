/**
 * The soak's honest clients: each loops over what an agent does (tools/call, tools/list,
 * resources/read, prompts/get; 2026-07-28 clients also open and close a subscriptions/listen
 * stream) with a short pause, in its era. Every request is a sample, failures included: a
 * failure's time is how long the client waited for it (up to the request timeout).
 */
import {
  LEGACY,
  failureLabel,
  labelOf,
  legacyHeaders,
  modernRequest,
  newId,
  parseBody,
  post,
  Tally,
  type Answer,
  type Target,
} from './wire.js';

/** How long an honest request may take before it counts as failed (and its time is this). */
export const HONEST_TIMEOUT_MS = 10_000;
const PAUSE_MS = 20;

export interface HonestReport {
  latencies: number[];
  failures: Tally;
  /** The first message of each kind of failure (up to 20), for the report. */
  examples: string[];
  ops: Tally;
}

type Op = [name: string, method: string, params: Record<string, unknown>];

const OPS: Op[] = [
  ['call', 'tools/call', { name: 'soak.echo', arguments: { text: 'hello' } }],
  ['list', 'tools/list', {}],
  ['read', 'resources/read', { uri: 'soak://note' }],
  ['call', 'tools/call', { name: 'soak.echo', arguments: { text: 'again' } }],
  ['prompt', 'prompts/get', { name: 'soak-prompt', arguments: {} }],
];

/** Runs `clients` honest clients of each era until `stop` resolves. */
export async function runHonest(
  t: Target,
  clients: number,
  stop: Promise<void>,
): Promise<HonestReport> {
  const report: HonestReport = {
    latencies: [],
    failures: new Tally(),
    examples: [],
    ops: new Tally(),
  };
  let running = true;
  void stop.then(() => (running = false));
  const loops: Promise<void>[] = [];
  for (let i = 0; i < clients; i++) {
    loops.push(modernLoop(t, report, () => running, i));
    loops.push(legacyLoop(t, report, () => running, i));
  }
  await Promise.all(loops);
  return report;
}

function record(r: HonestReport, op: string, ms: number, failure: string | undefined): void {
  r.latencies.push(ms);
  r.ops.add(op);
  if (failure === undefined) return;
  const label = `${op}: ${failure.split(':')[0]}`;
  // One example of each kind of failure, for the report.
  if (!r.failures.counts.has(label) && r.examples.length < 20) r.examples.push(`${op}: ${failure}`);
  r.failures.add(label);
}

/** The failure an answer is, or undefined when it is a success. */
function failureOf(a: Answer): string | undefined {
  const m = a.messages.find((x) => x.error !== undefined || x.result !== undefined);
  if (a.status !== 200 || m === undefined || m.error !== undefined)
    return `${labelOf(a)}: ${m?.error?.message ?? '(no answer)'}`;
  if ((m.result as { isError?: boolean }).isError === true)
    return `tool error: ${JSON.stringify(m.result).slice(0, 200)}`;
  return undefined;
}

async function timed(
  r: HonestReport,
  op: string,
  run: () => Promise<string | undefined>,
): Promise<void> {
  const t0 = performance.now();
  let failure: string | undefined;
  try {
    failure = await run();
  } catch (err) {
    failure = `${failureLabel(err)}: ${String(err)}`;
  }
  record(r, op, performance.now() - t0, failure);
}

const pause = () => new Promise((r) => setTimeout(r, PAUSE_MS));

async function modernLoop(
  t: Target,
  r: HonestReport,
  running: () => boolean,
  offset: number,
): Promise<void> {
  for (let i = offset; running(); i++) {
    if (i % 10 === 9) await timed(r, 'listen', () => listenOnce(t));
    else {
      const [op, method, params] = OPS[i % OPS.length]!;
      const { body, headers } = modernRequest(t, method, params);
      await timed(r, op, async () =>
        failureOf(await post(t.url, body, headers, HONEST_TIMEOUT_MS)),
      );
    }
    await pause();
  }
}

/** Opens a subscriptions/listen stream, waits for its acknowledgement, and closes it. */
async function listenOnce(t: Target): Promise<string | undefined> {
  const { body, headers } = modernRequest(t, 'subscriptions/listen', {
    notifications: { toolsListChanged: true },
  });
  const ctl = new AbortController();
  const timer = setTimeout(() => ctl.abort(), HONEST_TIMEOUT_MS);
  try {
    const res = await fetch(t.url, { method: 'POST', headers, body, signal: ctl.signal });
    if (!(res.headers.get('content-type') ?? '').includes('text/event-stream')) {
      const text = await res.text();
      return failureOf({
        status: res.status,
        messages: parseBody(text, 'application/json'),
        headers: res.headers,
      });
    }
    const reader = res.body!.getReader();
    let seen = '';
    while (!seen.includes('subscriptions/acknowledged')) {
      const { value, done } = await reader.read();
      if (done) return 'listen stream ended before its acknowledgement';
      seen += Buffer.from(value).toString();
    }
    return undefined;
  } finally {
    clearTimeout(timer);
    ctl.abort();
  }
}

async function initialize(t: Target): Promise<string> {
  const body = JSON.stringify({
    jsonrpc: '2.0',
    id: newId(),
    method: 'initialize',
    params: {
      protocolVersion: LEGACY,
      capabilities: {},
      clientInfo: { name: 'moonhub-soak', version: '1' },
    },
  });
  const a = await post(t.url, body, legacyHeaders(t), HONEST_TIMEOUT_MS);
  const sid = a.headers.get('mcp-session-id');
  if (a.status !== 200 || sid === null) throw new Error(`initialize: ${labelOf(a)}`);
  const note = JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' });
  await post(t.url, note, legacyHeaders(t, sid), HONEST_TIMEOUT_MS);
  return sid;
}

async function legacyLoop(
  t: Target,
  r: HonestReport,
  running: () => boolean,
  offset: number,
): Promise<void> {
  let session: string | undefined;
  for (let i = offset; running(); i++) {
    if (session === undefined) {
      await timed(r, 'initialize', async () => {
        session = await initialize(t);
        return undefined;
      });
      await pause();
      continue;
    }
    const [op, method, params] = OPS[i % OPS.length]!;
    const body = JSON.stringify({ jsonrpc: '2.0', id: newId(), method, params });
    const sid: string = session;
    await timed(r, op, async () => {
      const a = await post(t.url, body, legacyHeaders(t, sid), HONEST_TIMEOUT_MS);
      // A session the hub ended (evicted, expired) is a failure, and the client starts anew.
      if (a.status === 404) session = undefined;
      return failureOf(a);
    });
    await pause();
  }
}
