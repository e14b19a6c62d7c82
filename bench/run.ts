/**
 * `npm run bench [-- --quick] [-- --profile [--only=bare,proxy]] [-- --rounds=N --seconds=S] [-- --write-baseline]`
 * (`--only=reload`: the hot reload scenario alone)
 * (`--only=cluster-one,cluster-workers2,cluster-redis,cluster-notify,...`: the scale-out rows): measures moonhub against the
 * bare node:http ceiling and the official SDK in one run, prints the table, writes
 * bench/results/, and (with a recorded baseline) fails when one of our ratios fell more than
 * 25 % below it. See docs/performance.md for the method.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { join } from 'node:path';
import { ROOT, type Proc } from './lib/proc.js';
import {
  baselineOf,
  consoleTable,
  markdownTable,
  ratioChart,
  regressions,
  type Baseline,
  type Regression,
} from './lib/report.js';
import { summarize } from './lib/rows.js';
import { removeScratchDirs } from './lib/tmp.js';
import { ensureWrk } from './lib/wrk.js';
import { CLUSTER_ROWS, measureCluster } from './scenarios/cluster.js';
import { measureLeaks } from './scenarios/memory.js';
import { profileEras } from './scenarios/profile.js';
import { measureReload } from './scenarios/reload.js';
import { ROUND2_ROWS, measureIdleSessions, round2 } from './scenarios/round2.js';
import { measureSessionScale, measureToolScale } from './scenarios/scale.js';
import { QUICK_ROWS, measureThroughput } from './scenarios/throughput.js';

const RESULTS = join(ROOT, 'bench', 'results');
const BASELINE = join(ROOT, 'bench', 'baseline.json');

interface Flags {
  quick: boolean;
  /** `--only=id,id`: just these rows of the main table, no other scenario. */
  only: Set<string> | undefined;
  profile: boolean;
  writeBaseline: boolean;
  /** `--rounds=N` / `--seconds=S`: more or longer rounds, for effects smaller than the noise. */
  rounds?: number;
  seconds?: number;
}

function flags(argv: string[]): Flags {
  const known = new Set(['--quick', '--profile', '--write-baseline']);
  let only: Set<string> | undefined;
  let rounds: number | undefined;
  let seconds: number | undefined;
  for (const a of argv) {
    if (a.startsWith('--only=')) only = new Set(a.slice('--only='.length).split(','));
    else if (a.startsWith('--rounds=')) rounds = positiveInt(a);
    else if (a.startsWith('--seconds=')) seconds = positiveInt(a);
    else if (!known.has(a))
      throw new Error(
        `unknown flag ${a} (known: ${[...known].join(', ')}, --only=ROW,ROW, --rounds=N, --seconds=S)`,
      );
  }
  return {
    quick: argv.includes('--quick'),
    only,
    profile: argv.includes('--profile'),
    writeBaseline: argv.includes('--write-baseline'),
    ...(rounds !== undefined ? { rounds } : {}),
    ...(seconds !== undefined ? { seconds } : {}),
  };
}

function positiveInt(flag: string): number {
  const n = Number(flag.slice(flag.indexOf('=') + 1));
  if (!Number.isInteger(n) || n < 1 || n > 1000) throw new Error(`${flag}: expected 1..1000`);
  return n;
}

function wantsCluster(only: Set<string> | undefined, partial: boolean): boolean {
  if (only === undefined) return !partial;
  return [...only].some((id) => CLUSTER_ROWS.has(id) || id === 'cluster-notify');
}

function log(line: string): void {
  process.stderr.write(`bench: ${line}\n`);
}

function machine(): Record<string, unknown> {
  const c = cpus();
  return {
    cpus: c.length,
    cpuModel: c[0]?.model,
    memoryGB: Math.round(totalmem() / 2 ** 30),
    node: process.version,
    loadavgAtStart: loadavg().map((x) => Math.round(x * 100) / 100),
  };
}

async function main(): Promise<number> {
  const f = flags(process.argv.slice(2));
  ensureWrk();
  mkdirSync(RESULTS, { recursive: true });
  const started = Date.now();
  const procs: Proc[] = [];
  const stopAll = async () => {
    await Promise.allSettled(procs.map((p) => p.stop()));
    procs.length = 0;
  };
  try {
    if (f.profile) {
      const profiles = await profileEras(8, procs, log, f.only);
      writeFileSync(
        join(RESULTS, 'profile.json'),
        JSON.stringify({ date: new Date().toISOString(), machine: machine(), profiles }, null, 2) +
          '\n',
      );
      for (const p of profiles) {
        process.stdout.write(`\n${p.era}: ${p.rps} req/s, ${p.usPerRequest} µs CPU per request\n`);
        for (const a of p.areas) {
          process.stdout.write(
            `  ${a.area.padEnd(50)} ${String(p.areaUsPerRequest[a.area]).padStart(7)} µs  ${(a.share * 100).toFixed(1)} %\n`,
          );
        }
        for (const t of p.top.slice(0, 12)) {
          process.stdout.write(`    ${(t.share * 100).toFixed(1).padStart(5)} %  ${t.fn}\n`);
        }
      }
      return 0;
    }
    const settings = f.quick
      ? {
          rows: f.only ?? new Set([...QUICK_ROWS, ...ROUND2_ROWS]),
          rounds: 5,
          seconds: 1,
          warmSeconds: 1,
          proxyWaitMs: 3000,
          log,
        }
      : { rows: f.only, rounds: 3, seconds: 5, warmSeconds: 2, proxyWaitMs: 10_000, log };
    if (f.rounds !== undefined) settings.rounds = f.rounds;
    if (f.seconds !== undefined) settings.seconds = f.seconds;
    // Only a full run of every scenario replaces latest.json and the chart.
    const partial = f.quick || f.only !== undefined;
    const onlyCluster =
      f.only !== undefined &&
      [...f.only].every((id) => CLUSTER_ROWS.has(id) || id === 'cluster-notify');
    const mainRows = onlyCluster ? [] : await measureThroughput(settings, procs, [round2()]);
    await stopAll();
    let extra: Record<string, unknown> = {};
    // A size, not a rate: outside the rounds, in full runs or when asked for by name.
    if (!partial || f.only?.has('idle-sessions')) {
      extra.idleSessions = await measureIdleSessions(procs, log);
      await stopAll();
    }
    // The session scale points: in full runs, or named by --only (--only=session-scale).
    if (partial && f.only?.has('session-scale')) {
      extra.sessions = await measureSessionScale([1, 100, 10_000], 2, procs, log);
      await stopAll();
    }
    // Hot reload latency: in full runs, or named by --only (--only=reload).
    if (partial && f.only?.has('reload')) {
      extra.reload = await measureReload(15, procs, log);
      await stopAll();
    }
    let scaleRows: ReturnType<typeof summarize> = [];
    if (!partial) {
      const reload = await measureReload(15, procs, log);
      await stopAll();
      const tools = await measureToolScale([10, 1000, 10_000], 3, 2, procs, log);
      await stopAll();
      const sessions = await measureSessionScale([1, 100, 10_000], 2, procs, log);
      await stopAll();
      const leaks = await measureLeaks(100_000, procs, log);
      await stopAll();
      // The scale rows take their ratios against the bare server of the main rounds.
      scaleRows = summarize([...mainRows.filter((r) => r.id === 'bare'), ...tools.rows]).slice(1);
      extra = {
        ...extra,
        reload,
        toolScale: { points: tools.points, rows: scaleRows },
        sessions,
        leaks,
      };
    }
    // The scale-out rows (bench/scenarios/cluster.ts): in a full run, or named by --only.
    const cluster = wantsCluster(f.only, partial)
      ? await measureCluster({ ...settings, rows: f.only }, procs)
      : undefined;
    await stopAll();
    const clusterRows = cluster === undefined ? [] : summarize(cluster.rows);
    if (cluster !== undefined)
      extra = { ...extra, cluster: { rows: clusterRows, notify: cluster.notify } };
    const rows = summarize(mainRows);
    if (rows.length > 0) process.stdout.write(`\n${consoleTable(rows)}\n\n`);
    if (clusterRows.length > 0) process.stdout.write(`${consoleTable(clusterRows)}\n\n`);
    if (cluster?.notify !== undefined)
      process.stdout.write(
        `resource update, instance A -> listener on B (Redis): p50 ${cluster.notify.p50Ms} ms, p99 ${cluster.notify.p99Ms} ms\n\n`,
      );
    if (scaleRows.length > 0) process.stdout.write(`${consoleTable(scaleRows)}\n\n`);
    if (Object.keys(extra).length > 0) process.stdout.write(`${JSON.stringify(extra, null, 2)}\n`);

    const result = {
      date: new Date().toISOString(),
      mode: f.quick ? 'quick' : partial ? 'partial' : 'full',
      machine: machine(),
      settings: { rounds: settings.rounds, seconds: settings.seconds, loadGenerator: 'wrk -t1' },
      rows,
      ...extra,
      seconds: Math.round((Date.now() - started) / 1000),
    };
    if (partial) {
      writeFileSync(join(RESULTS, 'quick.json.tmp'), JSON.stringify(result, null, 2) + '\n');
    } else {
      writeFileSync(join(RESULTS, 'latest.json'), JSON.stringify(result, null, 2) + '\n');
      writeFileSync(
        join(RESULTS, 'latest.md'),
        markdownTable(rows) +
          '\n\n' +
          markdownTable(scaleRows) +
          '\n\n' +
          markdownTable(clusterRows) +
          '\n',
      );
      writeFileSync(
        join(RESULTS, 'ratios.svg'),
        ratioChart(rows, `moonhub benchmark, ${result.date.slice(0, 10)}`),
      );
    }

    if (f.writeBaseline) {
      writeFileSync(BASELINE, JSON.stringify(baselineOf(rows), null, 2) + '\n');
      log(`recorded ${BASELINE}`);
      return 0;
    }
    if (!existsSync(BASELINE)) {
      log('no bench/baseline.json: nothing to compare against');
      return 0;
    }
    const baseline = JSON.parse(readFileSync(BASELINE, 'utf8')) as Baseline;
    const key = (r: Regression) => `${r.id}:${r.ratio}`;
    const show = (r: Regression) =>
      `${r.id} ${r.ratio === 'rps' ? 'req/s' : 'CPU/request'} ratio ${(r.now * 100).toFixed(1)} %, recorded ${(r.recorded * 100).toFixed(1)} %`;
    let bad = regressions(rows, baseline);
    if (bad.length > 0) {
      // A shared machine can slow one round down: a drop counts only if a second run shows it too.
      log(`possible regression (${bad.map(show).join('; ')}); measuring again to confirm`);
      await stopAll();
      // Only the rows that dropped (and the ceiling) are measured again, to stay under a minute.
      const rerun = { ...settings, rows: new Set(bad.map((r) => r.id)) };
      const again = regressions(
        summarize(await measureThroughput(rerun, procs, [round2()])),
        baseline,
      );
      const seen = new Set(bad.map(key));
      bad = again.filter((r) => seen.has(key(r)));
    }
    for (const b of bad) log(`REGRESSION ${show(b)}: more than 25 % below bench/baseline.json`);
    if (bad.length === 0) log('ratios within 25 % of bench/baseline.json');
    return bad.length === 0 ? 0 : 1;
  } finally {
    await stopAll();
    removeScratchDirs();
    log(`done in ${Math.round((Date.now() - started) / 1000)} s`);
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(
      `bench: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
    );
    process.exit(2);
  },
);
