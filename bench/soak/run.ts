/**
 * `npm run soak`: a bounded mixed run of honest and hostile clients against a real hub process
 * (token auth: the honest clients and the attacker are different principals). Prints the hub's
 * RSS at start, peak and end, what each hostile class got back, and the honest clients' p50/p99
 * over every honest request (failures included, at the time they took); then stops the hub with
 * SIGTERM and checks it drains and exits 0. Exits non-zero when an honest request failed, the
 * honest p99 or the RSS passed its bound, or the hub died. Thresholds: docs/security.md, "Soak".
 *
 *   npm run soak                       # short form (CI): 45 s of attack
 *   npm run soak -- --minutes=10       # long form
 *   options: --seconds=N --clients=N --only=class,class --p99-ms=N --rss-growth-mib=N
 *            --rss-peak-mib=N --json
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { BIN, rssOf } from '../lib/proc.js';
import { percentile } from '../lib/stats.js';
import { runHonest, type HonestReport } from './honest.js';
import type { Target } from './wire.js';

/** The bounds the finished issue 12 promises (docs/security.md, "Soak"). */
const DEFAULTS = { seconds: 45, clients: 2, p99Ms: 250, rssGrowthMiB: 128, rssPeakMiB: 384 };
const WARMUP_MS = 3_000;
const COOLDOWN_MS = 3_000;
const MiB = 1024 * 1024;

/** A plugin of its own: its restarts must not touch the honest clients' plugin. */
const SPIN = 'mcp.tool("spin.loop", { timeout_ms = 1000 }, function() while true do end end)\n';

const PLUGIN = String.raw`
mcp.tool("soak.echo", {
  input_schema = { type = "object", properties = { text = { type = "string" } } },
}, function(p) return { echoed = p.text } end)
mcp.resource("soak://note", { name = "a note" }, function() return "a note for the soak" end)
mcp.prompt("soak-prompt", { description = "a prompt" }, function() return "hello from the soak" end)
`;

interface Options {
  seconds: number;
  clients: number;
  p99Ms: number;
  rssGrowthMiB: number;
  rssPeakMiB: number;
  only: string[] | undefined;
  json: boolean;
}

function parseArgs(argv: string[]): Options {
  const o: Options = { ...DEFAULTS, only: undefined, json: false };
  for (const a of argv) {
    const [k, v] = a.replace(/^--/, '').split('=') as [string, string | undefined];
    const n = Number(v);
    if (k === 'json') o.json = true;
    else if (k === 'only' && v) o.only = v.split(',');
    else if (k === 'minutes' && n > 0) o.seconds = Math.round(n * 60);
    else if (k === 'seconds' && n > 0) o.seconds = n;
    else if (k === 'clients' && n > 0) o.clients = n;
    else if (k === 'p99-ms' && n > 0) o.p99Ms = n;
    else if (k === 'rss-growth-mib' && n > 0) o.rssGrowthMiB = n;
    else if (k === 'rss-peak-mib' && n > 0) o.rssPeakMiB = n;
    else throw new Error(`soak: unknown or invalid option ${a}`);
  }
  return o;
}

/** A scratch hub folder: the soak plugin, a token-auth config, its data folder. */
function hubFolder(): { dir: string; config: string } {
  const dir = mkdtempSync(join(tmpdir(), 'moonhub-soak-'));
  mkdirSync(join(dir, 'plugins'));
  writeFileSync(join(dir, 'plugins', 'soak.lua'), PLUGIN);
  writeFileSync(join(dir, 'plugins', 'spin.lua'), SPIN);
  const config = join(dir, 'moonhub.yaml');
  writeFileSync(
    config,
    `plugins: { dirs: [plugins] }
data_dir: data
auth: { mode: token }
agents: { honest: {}, attacker: {} }
`,
  );
  return { dir, config };
}

function token(config: string, agent: string): string {
  const r = spawnSync(
    process.execPath,
    [BIN, 'session', 'create', '--config', config, '--agent', agent],
    {
      encoding: 'utf8',
      timeout: 30_000,
    },
  );
  if (r.status !== 0) throw new Error(`session create --agent ${agent} failed: ${r.stderr}`);
  return (JSON.parse(r.stdout) as { token: string }).token;
}

async function startHub(config: string) {
  const child = spawn(
    process.execPath,
    [BIN, 'serve', '--config', config, '--port', '0', '--no-watch'],
    {
      stdio: ['ignore', 'ignore', 'pipe'],
      env: { ...process.env, MOONHUB_LOG_LEVEL: 'warn' },
    },
  );
  let log = '';
  child.stderr.on('data', (d: Buffer) => {
    // Keep the start and the tail: a long run's warnings must not grow the soak's own heap.
    log = log.length > 200_000 ? log.slice(0, 20_000) + log.slice(-100_000) : log;
    log += d.toString();
  });
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`hub did not start:\n${log}`)), 30_000);
    const onData = () => {
      const m = /serving MCP at (\S+)/.exec(log);
      if (m === null) return;
      clearTimeout(timer);
      resolve(m[1]!);
    };
    child.stderr.on('data', onData);
    child.once('exit', (code) => reject(new Error(`hub exited (${code}):\n${log}`)));
  });
  return { child, url, log: () => log };
}

interface HostileResult {
  name: string;
  what: string;
  outcomes: Record<string, number>;
  error?: string;
}

function runHostile(
  target: Target,
  seconds: number,
  only: string[] | undefined,
): Promise<HostileResult[]> {
  const worker = new Worker(new URL('./hostile-worker.js', import.meta.url), {
    workerData: { target, seconds, only },
  });
  return new Promise((resolve, reject) => {
    worker.once('message', (m: { classes: HostileResult[] }) => {
      resolve(m.classes);
      void worker.terminate();
    });
    worker.once('error', reject);
  });
}

const mib = (b: number) => (b / MiB).toFixed(0);
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

async function main(): Promise<void> {
  const o = parseArgs(process.argv.slice(2));
  const { dir, config } = hubFolder();
  const hub = await startHub(config);
  let died: string | undefined;
  hub.child.once(
    'exit',
    (code, signal) => (died ??= `hub exited during the soak (${signal ?? code})`),
  );
  try {
    const honest: Target = { url: hub.url, token: token(config, 'honest') };
    const attacker: Target = { url: hub.url, token: token(config, 'attacker') };
    const pid = hub.child.pid;
    // Warm up (plugin workers, first calls, JIT) before the starting RSS is taken.
    await runHonest(honest, o.clients, sleep(WARMUP_MS));
    const rssStart = rssOf(pid);
    let rssPeak = rssStart;
    const sampler = setInterval(() => (rssPeak = Math.max(rssPeak, rssOf(pid))), 100);
    const t0 = Date.now();
    const hostile = runHostile(attacker, o.seconds, o.only);
    const honestRun = runHonest(
      honest,
      o.clients,
      hostile.then(() => sleep(COOLDOWN_MS)),
    );
    const [classes, report] = await Promise.all([hostile, honestRun]);
    clearInterval(sampler);
    const rssEnd = rssOf(pid);
    const elapsed = (Date.now() - t0) / 1000;
    const diedDuring = died;
    const shutdown = await stopHub(hub.child);
    const verdict = judge(o, report, { rssStart, rssPeak, rssEnd }, diedDuring, shutdown);
    print(o, { elapsed, classes, report, rss: { rssStart, rssPeak, rssEnd }, shutdown, verdict });
    process.exitCode = verdict.length === 0 ? 0 : 1;
  } finally {
    if (hub.child.exitCode === null) hub.child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
}

/** SIGTERM, then how the hub ended and how long it took. */
async function stopHub(
  child: ReturnType<typeof spawn>,
): Promise<{ code: number | null; ms: number }> {
  if (child.exitCode !== null) return { code: child.exitCode, ms: 0 };
  const t0 = Date.now();
  const done = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  child.kill('SIGTERM');
  const code = await Promise.race([done, sleep(20_000).then(() => null)]);
  return { code, ms: Date.now() - t0 };
}

interface Rss {
  rssStart: number;
  rssPeak: number;
  rssEnd: number;
}

function judge(
  o: Options,
  r: HonestReport,
  rss: Rss,
  died: string | undefined,
  shutdown: { code: number | null },
): string[] {
  const out: string[] = [];
  if (died !== undefined) out.push(died);
  if (r.failures.total > 0) out.push(`${r.failures.total} honest request(s) failed`);
  const p99 = percentile(r.latencies, 99);
  if (!(p99 <= o.p99Ms)) out.push(`honest p99 ${p99.toFixed(1)} ms > ${o.p99Ms} ms`);
  const growth = (rss.rssEnd - rss.rssStart) / MiB;
  if (growth > o.rssGrowthMiB)
    out.push(`RSS grew ${growth.toFixed(0)} MiB > ${o.rssGrowthMiB} MiB`);
  const peak = (rss.rssPeak - rss.rssStart) / MiB;
  if (peak > o.rssPeakMiB)
    out.push(`RSS peaked ${peak.toFixed(0)} MiB over the start > ${o.rssPeakMiB} MiB`);
  if (shutdown.code !== 0) out.push(`the hub did not exit 0 on SIGTERM (${shutdown.code})`);
  return out;
}

function print(
  o: Options,
  x: {
    elapsed: number;
    classes: HostileResult[];
    report: HonestReport;
    rss: Rss;
    shutdown: { code: number | null; ms: number };
    verdict: string[];
  },
): void {
  const { report: r, rss } = x;
  const p50 = percentile(r.latencies, 50);
  const p99 = percentile(r.latencies, 99);
  if (o.json) {
    const summary = {
      seconds: x.elapsed,
      rss_mib: { start: +mib(rss.rssStart), peak: +mib(rss.rssPeak), end: +mib(rss.rssEnd) },
      honest: {
        requests: r.latencies.length,
        failures: r.failures.toJSON(),
        p50_ms: p50,
        p99_ms: p99,
        ops: r.ops.toJSON(),
      },
      hostile: x.classes,
      shutdown: x.shutdown,
      verdict: x.verdict,
    };
    process.stdout.write(JSON.stringify(summary, null, 2) + '\n');
    return;
  }
  const say = (s: string) => process.stdout.write(s + '\n');
  say(
    `soak: ${x.elapsed.toFixed(0)} s of attack (+${COOLDOWN_MS / 1000} s cool-down), ${o.clients} honest client(s) per era`,
  );
  say(
    `RSS: start ${mib(rss.rssStart)} MiB, peak ${mib(rss.rssPeak)} MiB, end ${mib(rss.rssEnd)} MiB` +
      ` (bounds: growth <= ${o.rssGrowthMiB} MiB, peak <= start + ${o.rssPeakMiB} MiB)`,
  );
  say(
    `honest: ${r.latencies.length} requests ${JSON.stringify(r.ops.toJSON())}, ${r.failures.total} failed,` +
      ` p50 ${p50.toFixed(1)} ms, p99 ${p99.toFixed(1)} ms (bound ${o.p99Ms} ms)`,
  );
  for (const [label, n] of Object.entries(r.failures.toJSON())) say(`  failed: ${n} x ${label}`);
  for (const e of r.examples) say(`  e.g. ${e.slice(0, 240)}`);
  say('hostile classes (what they got back):');
  for (const c of x.classes) {
    const got = Object.entries(c.outcomes)
      .map(([k, n]) => `${n} x ${k}`)
      .join(', ');
    say(
      `  ${c.name.padEnd(18)} ${got || '(nothing)'}${c.error ? `  [class failed: ${c.error}]` : ''}`,
    );
  }
  say(`shutdown: SIGTERM -> exit ${x.shutdown.code} in ${x.shutdown.ms} ms`);
  say(x.verdict.length === 0 ? 'soak: PASS' : `soak: FAIL\n  ${x.verdict.join('\n  ')}`);
}

await main();
