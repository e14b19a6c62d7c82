/**
 * `node dist/bench/gc-survival.js [modern|legacy|proxied|execute] [--config=F] [--seconds=N]
 * [--max-promoted=BYTES]`: what of each
 * Lua echo call outlives it (`proxied`: the second hub of the `hub-proxied` row, which imports the
 * first one's echo with `mcp.proxy`; the figures are the second hub's; `execute`: the `execute`
 * row's three-call script on one connection). Starts a hub with `--trace-gc-nvp`, loads it with wrk (50 connections, 2 s of
 * warm-up, then `seconds`, default 4) and sums the young-generation collections of each thread
 * (V8 isolate): bytes allocated, surviving a scavenge and promoted per call, and the time spent
 * in scavenges and mark-compacts. A healthy hub keeps well under 1 KB per call; a few KB means
 * something holds finished requests (docs/performance.md, "Session 9"). Run it a few times: the
 * failure it found came and went from run to run. With `--max-promoted`, it exits 1 when a
 * thread promotes more than that per call (CI runs it on the Lua echo, both eras).
 */
import { join } from 'node:path';
import { ROOT, startHub, type Proc } from './lib/proc.js';
import { echoCall, openSession, spec as requestSpec, type Era } from './lib/rpc.js';
import { runWrk } from './lib/wrk.js';
import { EXECUTE_SCRIPT, startProxyHub } from './scenarios/throughput.js';

interface Isolate {
  scavenges: number;
  scavengeMs: number;
  markCompacts: number;
  markCompactMs: number;
  allocated: number;
  survived: number;
  promoted: number;
}

function field(line: string, key: string): number {
  const m = new RegExp(` ${key}=([0-9.]+)`).exec(line);
  return m ? Number(m[1]) : 0;
}

/** Sums `--trace-gc-nvp` lines per isolate (the address after the pid). */
function summarise(trace: string): Map<string, Isolate> {
  const out = new Map<string, Isolate>();
  for (const line of trace.split('\n')) {
    const m = /^\[\d+:(0x[0-9a-f]+)\]/.exec(line);
    if (!m) continue;
    const a = out.get(m[1]!) ?? {
      scavenges: 0,
      scavengeMs: 0,
      markCompacts: 0,
      markCompactMs: 0,
      allocated: 0,
      survived: 0,
      promoted: 0,
    };
    if (line.includes(' gc=s ')) {
      a.scavenges++;
      a.scavengeMs += field(line, 'pause');
      a.allocated += field(line, 'allocated');
      a.survived += field(line, 'new_space_survived');
      a.promoted += field(line, 'promoted');
    } else if (/ gc=m/.test(line)) {
      a.markCompacts++;
      a.markCompactMs += field(line, 'pause');
    }
    out.set(m[1]!, a);
  }
  return out;
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const option = (name: string) =>
    args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
  const eraArg = args.find((a) => !a.startsWith('--'));
  const config = option('config');
  const secondsArg = option('seconds');
  const maxPromoted = option('max-promoted');
  const proxied = eraArg === 'proxied';
  const era: Era = eraArg === 'legacy' ? 'legacy' : 'modern';
  const seconds = Number(secondsArg ?? 4);
  const procs: Proc[] = [];
  const flags = ['--trace-gc-nvp'];
  const first = await startHub('gc', {
    plugins: [join(ROOT, 'bench', 'plugins')],
    watch: false,
    config,
    nodeArgs: proxied ? [] : flags,
  });
  procs.push(first);
  try {
    let hub = first;
    if (proxied) {
      const started = await startProxyHub(first.url, 15_000, procs, flags);
      if (!('hub' in started)) throw new Error(started.note);
      hub = started.hub;
    }
    let trace = '';
    hub.child.stdout!.on('data', (d: Buffer) => (trace += d.toString()));
    const session = era === 'legacy' ? await openSession(hub.url) : undefined;
    const execute = eraArg === 'execute';
    const spec = execute
      ? requestSpec(hub.url, 'modern', 'tools/call', {
          name: 'execute',
          arguments: { code: EXECUTE_SCRIPT },
        })
      : echoCall(hub.url, era, session, proxied ? 'up.echo' : 'echo');
    const connections = execute ? 1 : 50;
    await runWrk(spec, { connections, seconds: proxied ? 6 : 2 });
    trace = '';
    const s = await runWrk(spec, { connections, seconds });
    console.log(`${eraArg ?? era}: ${Math.round(s.rps)} req/s, ${s.requests} calls`);
    let worst = 0;
    for (const [isolate, a] of summarise(trace)) {
      worst = Math.max(worst, a.promoted / s.requests);
      const per = (b: number) => `${Math.round(b / s.requests)} B`;
      console.log(
        `  ${isolate}: allocated ${per(a.allocated)}, survived ${per(a.survived)}, promoted ${per(a.promoted)} per call; ` +
          `${a.scavenges} scavenges ${Math.round(a.scavengeMs)} ms, ${a.markCompacts} mark-compacts ${Math.round(a.markCompactMs)} ms`,
      );
    }
    if (maxPromoted !== undefined && worst > Number(maxPromoted)) {
      console.error(
        `gc-survival: a thread promoted ${Math.round(worst)} B per call (bound ${maxPromoted} B): something keeps finished calls alive (docs/performance.md, "Session 9")`,
      );
      process.exitCode = 1;
    }
  } finally {
    for (const p of procs) p.child.kill('SIGKILL');
  }
}

await main();
