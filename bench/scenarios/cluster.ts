/**
 * The scale-out rows (docs/scale-out.md), their ratios against one plain process measured in the
 * same interleaved rounds: the Lua echo `tools/call` (2026-07-28 and a 2025 session) with
 * `--workers 2` and with one instance on Redis (`cluster.redis`); then the delay from
 * `mcp.resource_updated` on one Redis instance to the notification on another's listen stream;
 * and, with plugins on the hub's thread on both sides (`cluster-inproc-*`), `--workers 2`
 * against one process.
 * The Redis rows need redis-server (Debian package); without it they say n/a.
 */
import { spawn, spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { cpuMsOf, startHub, type Proc } from '../lib/proc.js';
import { echoCall, openSession, send, spec, type RequestSpec } from '../lib/rpc.js';
import { newRow, type Row } from '../lib/rows.js';
import { percentile } from '../lib/stats.js';
import { scratchDir } from '../lib/tmp.js';
import { runWrk } from '../lib/wrk.js';
import { ECHO_PLUGINS } from './throughput.js';

export const CLUSTER_ROWS: ReadonlySet<string> = new Set([
  'cluster-one',
  'cluster-workers2',
  'cluster-redis',
  'cluster-2025-one',
  'cluster-2025-workers2',
  'cluster-2025-redis',
  'cluster-inproc-one',
  'cluster-inproc-workers2',
]);

/**
 * The `--workers 2` comparison with plugins on the hub's thread (`plugins.isolation: none`) on
 * both sides: with the default isolation one process already keeps two threads busy (the hub's
 * and the plugin's), so on two cores shared with wrk a second process has little left to use.
 */
const IN_PROCESS = 'plugins: { isolation: none }\n';

export interface ClusterSettings {
  rounds: number;
  seconds: number;
  warmSeconds: number;
  /** Rows wanted (`--only=`); undefined: all. */
  rows?: ReadonlySet<string> | undefined;
  log: (line: string) => void;
}

export interface NotifyDelay {
  changes: number;
  p50Ms: number;
  p99Ms: number;
}

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

/** A throwaway redis-server (no persistence) as a Proc, or undefined when not installed. */
async function startRedis(): Promise<Proc | undefined> {
  if (spawnSync('redis-server', ['--version']).status !== 0) return undefined;
  const port = await freePort();
  const dir = scratchDir('redis');
  const child = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let out = '';
  await new Promise<void>((ok, fail) => {
    const on = (d: Buffer) => {
      out += d.toString();
      if (out.includes('Ready to accept connections')) ok();
    };
    child.stdout!.on('data', on);
    child.once('exit', (code) => fail(new Error(`redis-server exited ${code}:\n${out}`)));
  });
  const url = `redis://127.0.0.1:${port}`;
  return {
    name: 'redis',
    child,
    url,
    log: () => out,
    rss: () => 0,
    cpuMs: () => cpuMsOf(child.pid),
    heap: () => Promise.reject(new Error('not a node process')),
    stop: () =>
      new Promise((done) => {
        if (child.exitCode !== null) return done();
        child.once('exit', () => done());
        child.kill('SIGTERM');
      }),
  };
}

/** A hub with a config of its own (data folder, cluster keys). */
function clusterHub(name: string, cluster: string, plugins = ECHO_PLUGINS): Promise<Proc> {
  const dir = scratchDir(`cluster-${name}`);
  const config = join(dir, 'moonhub.yaml');
  writeFileSync(config, `data_dir: ${join(dir, 'data')}\n${cluster}`);
  return startHub(name, { plugins: [plugins], watch: false, config });
}

/** CPU of a hub and, with --workers, of its workers (pids from their ready lines). */
function cpuOf(proc: Proc): number {
  const pids = [...proc.log().matchAll(/worker \d+ \(pid (\d+)/g)].map((m) => Number(m[1]));
  return proc.cpuMs() + pids.reduce((n, pid) => n + cpuMsOf(pid), 0);
}

interface Target {
  row: Row;
  proc: Proc;
  spec: RequestSpec;
}

export async function measureCluster(
  settings: ClusterSettings,
  procs: Proc[],
): Promise<{ rows: Row[]; notify: NotifyDelay | undefined }> {
  const { log } = settings;
  const ref = (era: string) =>
    era === '2025' ? 'cluster-2025-one' : era === 'inproc' ? 'cluster-inproc-one' : 'cluster-one';
  const rows: Row[] = [];
  const make = (id: string, label: string, era: string) => {
    const row = newRow(id, label, { ref: ref(era) });
    rows.push(row);
    return row;
  };
  const wanted = (id: string) => settings.rows === undefined || settings.rows.has(id);
  const track = async (p: Promise<Proc | undefined>) => {
    const proc = await p;
    if (proc !== undefined) procs.push(proc);
    return proc;
  };
  log('cluster: starting redis-server and the hubs');
  const redis = await track(startRedis());
  const one = (await track(clusterHub('cluster-one', '')))!;
  const workers = (await track(clusterHub('cluster-workers2', 'cluster: { workers: 2 }\n')))!;
  const onRedis =
    redis === undefined
      ? undefined
      : await track(clusterHub('cluster-redis', `cluster: { redis: "${redis.url}" }\n`));

  const targets: Target[] = [];
  for (const era of ['2026', '2025'] as const) {
    const suffix = era === '2025' ? '-2025' : '';
    const label = (what: string) =>
      `moonhub Lua echo, ${era === '2025' ? '2025 session' : '2026-07-28'}, ${what}`;
    const add = async (id: string, what: string, proc: Proc | undefined) => {
      const row = make(id, label(what), era);
      if (proc === undefined) {
        row.na = 'n/a: redis-server is not installed';
        return;
      }
      const s =
        era === '2025'
          ? echoCall(proc.url, 'legacy', await openSession(proc.url))
          : echoCall(proc.url, 'modern');
      targets.push({ row, proc, spec: s });
    };
    await add(`cluster${suffix}-one`, 'one process', one);
    await add(`cluster${suffix}-workers2`, '--workers 2', workers);
    await add(`cluster${suffix}-redis`, 'one instance on Redis', onRedis);
  }
  if (wanted('cluster-inproc-one') || wanted('cluster-inproc-workers2')) {
    const label = (what: string) => `moonhub Lua echo, 2026-07-28, isolation none, ${what}`;
    for (const [id, what, cluster] of [
      ['cluster-inproc-one', 'one process', ''],
      ['cluster-inproc-workers2', '--workers 2', 'cluster: { workers: 2 }\n'],
    ] as const) {
      const proc = (await track(clusterHub(id, IN_PROCESS + cluster)))!;
      targets.push({
        row: make(id, label(what), 'inproc'),
        proc,
        spec: echoCall(proc.url, 'modern'),
      });
    }
  }
  const active = targets.filter(
    (t) => wanted(t.row.id) || targets.some((o) => wanted(o.row.id) && o.row.ref === t.row.id),
  );
  for (const t of active) await runWrk(t.spec, { connections: 50, seconds: settings.warmSeconds });
  for (let round = 0; round < settings.rounds; round++) {
    const order = active.map((_, i) => active[(i + round) % active.length]!);
    for (const t of order) {
      const cpu0 = cpuOf(t.proc);
      const sample = await runWrk(t.spec, { connections: 50, seconds: settings.seconds });
      sample.cpuUsPerRequest = ((cpuOf(t.proc) - cpu0) * 1000) / sample.requests;
      t.row.samples.push(sample);
      t.row.rssBytes.push(t.proc.rss());
      log(
        `round ${round + 1}/${settings.rounds} ${t.row.id}: ${Math.round(sample.rps)} req/s, ${sample.cpuUsPerRequest.toFixed(1)} µs CPU/req` +
          (sample.errors ? `, ${sample.errors} errors` : ''),
      );
    }
  }
  const activeIds = new Set(active.map((t) => t.row.id));
  const measured = rows.filter((r) => activeIds.has(r.id) || (r.na !== undefined && wanted(r.id)));

  let notify: NotifyDelay | undefined;
  if (redis !== undefined && wanted('cluster-notify')) {
    const dir = scratchDir('cluster-touch');
    writeFileSync(join(dir, 'touch.lua'), TOUCH_PLUGIN);
    const cfg = `cluster: { redis: "${redis.url}" }\n`;
    const [a, b] = await Promise.all([
      track(clusterHub('cluster-notify-a', cfg, dir)),
      track(clusterHub('cluster-notify-b', cfg, dir)),
    ]);
    const delays = await notifyDelays(a!.url, b!.url, 200);
    notify = {
      changes: delays.length,
      p50Ms: Math.round(percentile(delays, 50) * 10) / 10,
      p99Ms: Math.round(percentile(delays, 99) * 10) / 10,
    };
    log(
      `cluster: resource update A -> listener on B: p50 ${notify.p50Ms} ms, p99 ${notify.p99Ms} ms`,
    );
  }
  return { rows: measured, notify };
}

export const TOUCH_PLUGIN =
  'mcp.tool("touch", {}, function() mcp.resource_updated("bench://w") return "ok" end)\n' +
  'mcp.resource("bench://w", { name = "w" }, function() return "w" end)\n';

/**
 * Delay from a `tools/call` on `a` whose tool calls `mcp.resource_updated` to the notification
 * on a `subscriptions/listen` stream of `b`, in ms, one change at a time.
 */
export async function notifyDelays(a: string, b: string, n: number): Promise<number[]> {
  let text = '';
  let waiting: (() => void) | undefined;
  const s = spec(b, 'modern', 'subscriptions/listen', {
    notifications: { resourceSubscriptions: ['bench://w'] },
  });
  const listen = request(b, { method: 'POST', headers: s.headers });
  listen.on('response', (res) =>
    res.on('data', (d: Buffer) => {
      text += d.toString();
      waiting?.();
    }),
  );
  listen.end(`${s.prefix}1${s.suffix}`);
  while (!text.includes('acknowledged')) await new Promise((r) => setTimeout(r, 10));
  const touch = spec(a, 'modern', 'tools/call', { name: 'touch', arguments: {} });
  const out: number[] = [];
  try {
    for (let i = 0; i < n; i++) {
      const seen = text.split('resources/updated').length;
      const t0 = performance.now();
      const arrived = new Promise<void>((r) => {
        waiting = () => text.split('resources/updated').length > seen && r();
      });
      void send(touch, i + 2);
      await arrived;
      out.push(performance.now() - t0);
    }
  } finally {
    listen.destroy();
  }
  return out;
}
