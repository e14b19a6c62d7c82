/**
 * `node dist/bench/ab-stdio.js OTHER_TREE [rounds] [seconds]`: the stdio Lua echo (50 in flight,
 * as the `hub-stdio` row) on this tree's hub and another checkout's (built), each with plugin
 * isolation on and `isolation: none`, the order alternating per round, and the CPU per call of
 * each hub thread by kind: the main thread, the plugin worker, V8's GC helpers, the rest (libuv).
 * Separates the hop's cost per thread where separate runs of the bench cannot
 * (docs/performance.md, "Session 11: the worker hop").
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ROOT, startHub, type Proc } from './lib/proc.js';
import { echoCall } from './lib/rpc.js';
import { StdioDriver } from './lib/stdio-driver.js';
import { removeScratchDirs, scratchDir } from './lib/tmp.js';

type Start = typeof startHub;
type Kind = 'main' | 'worker' | 'gc' | 'rest';
const KINDS: Kind[] = ['main', 'worker', 'gc', 'rest'];

/** CPU ms of every thread of `pid` (user + system), by thread id, from /proc. */
function threads(pid: number): Map<number, number> {
  const out = new Map<number, number>();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const s = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
      out.set(Number(tid), (Number(f[11]) + Number(f[12])) * 10);
    } catch {
      // The thread ended between the listing and the read.
    }
  }
  return out;
}

/**
 * CPU ms per kind of thread between two readings. Node names no thread, so: the main thread is
 * the process's id, V8's four platform (GC helper) threads are the next four made, and the plugin
 * worker is the busiest of the others (libuv's pool, the inspector's, the signal thread idle).
 */
function byKind(pid: number, before: Map<number, number>, after: Map<number, number>) {
  const ms: Record<Kind, number> = { main: 0, worker: 0, gc: 0, rest: 0 };
  const tids = [...after.keys()].sort((a, b) => a - b);
  const d = (tid: number) => after.get(tid)! - (before.get(tid) ?? 0);
  const others = tids.filter((t) => t !== pid).slice(4);
  const busiest = others.reduce((b, t) => (b === undefined || d(t) > d(b) ? t : b), others[0]);
  for (const [i, tid] of tids.entries()) {
    const kind: Kind =
      tid === pid ? 'main' : i <= 4 ? 'gc' : tid === busiest && d(tid) > 0 ? 'worker' : 'rest';
    ms[kind] += d(tid);
  }
  return ms;
}

interface Hub {
  proc: Proc;
  driver: StdioDriver;
}

async function stdioHub(start: Start, name: string, config?: string): Promise<Hub> {
  const proc = await start(name, {
    plugins: [join(ROOT, 'bench', 'plugins')],
    stdio: true,
    watch: false,
    ...(config === undefined ? {} : { config }),
  });
  const driver = new StdioDriver(proc.child.stdin!, proc.child.stdout!);
  await driver.initialize();
  return { proc, driver };
}

async function main(): Promise<void> {
  const [other, roundsArg, secondsArg] = process.argv.slice(2);
  if (other === undefined) throw new Error('usage: ab-stdio.js OTHER_TREE [rounds] [seconds]');
  const rounds = Number(roundsArg ?? 4);
  const seconds = Number(secondsArg ?? 3);
  const otherProc = (await import(
    pathToFileURL(join(other, 'dist', 'bench', 'lib', 'proc.js')).href
  )) as { startHub: Start };
  const inproc = join(scratchDir('ab-stdio'), 'moonhub.json');
  writeFileSync(inproc, JSON.stringify({ plugins: { isolation: 'none' } }));
  const hubs = new Map<string, Hub>();
  const call = echoCall('', 'legacy');
  try {
    hubs.set('other worker', await stdioHub(otherProc.startHub, 'other'));
    hubs.set('this worker', await stdioHub(startHub, 'this'));
    hubs.set('other none', await stdioHub(otherProc.startHub, 'other-none', inproc));
    hubs.set('this none', await stdioHub(startHub, 'this-none', inproc));
    for (const h of hubs.values()) await h.driver.load(call.prefix, call.suffix, 50, 2);
    const acc = new Map<string, { calls: number; ms: Record<Kind, number>; rps: number[] }>();
    for (let r = 0; r < rounds; r++) {
      const keys = [...hubs.keys()];
      if (r % 2 === 1) keys.reverse();
      for (const k of keys) {
        const h = hubs.get(k)!;
        const pid = h.proc.child.pid!;
        const before = threads(pid);
        const sample = await h.driver.load(call.prefix, call.suffix, 50, seconds);
        const a = acc.get(k) ?? { calls: 0, ms: { main: 0, worker: 0, gc: 0, rest: 0 }, rps: [] };
        const ms = byKind(pid, before, threads(pid));
        for (const kind of KINDS) a.ms[kind] += ms[kind];
        a.calls += sample.requests;
        a.rps.push(Math.round(sample.rps));
        acc.set(k, a);
      }
    }
    const us = (ms: number, n: number) => ((ms * 1000) / n).toFixed(1);
    for (const [k, a] of acc) {
      const total = KINDS.reduce((s, kind) => s + a.ms[kind], 0);
      const parts = KINDS.map((kind) => `${kind} ${us(a.ms[kind], a.calls)}`).join(', ');
      console.log(`${k}: req/s ${a.rps.join(', ')}; µs/call ${us(total, a.calls)} (${parts})`);
    }
  } finally {
    for (const h of hubs.values()) await h.proc.stop();
    removeScratchDirs();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
