/**
 * `node dist/bench/ab-hubs.js OTHER_TREE [rounds] [seconds]`: this tree's hub and another
 * checkout's (built, e.g. a copy of main's `dist/` beside its `bin/`), side by side in one run:
 * the Lua echo `tools/call` in both eras, wrk with 50 connections on each hub in turn, the order
 * alternating per round, and the CPU of each hub's main thread and of its other threads (plugin
 * worker, GC helpers) per request. On a shared machine this separates a few percent that
 * separate runs of `npm run bench` cannot (docs/performance.md, "HTTP path, session 6").
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ROOT, startHub, type Proc } from './lib/proc.js';
import { echoCall, openSession, type RequestSpec } from './lib/rpc.js';
import { runWrk } from './lib/wrk.js';

type Start = typeof startHub;
const ERAS = ['modern', 'legacy'] as const;

/** CPU ms of one thread (user + system), from /proc. */
function threadMs(pid: number, tid: string): number {
  try {
    const s = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
    const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) * 10;
  } catch {
    return 0;
  }
}

function perThread(pid: number): Map<string, number> {
  return new Map(readdirSync(`/proc/${pid}/task`).map((t) => [t, threadMs(pid, t)]));
}

interface Acc {
  requests: number;
  mainMs: number;
  otherMs: number;
  rps: number[];
}

async function main(): Promise<void> {
  const [other, roundsArg, secondsArg] = process.argv.slice(2);
  if (other === undefined) throw new Error('usage: ab-hubs.js OTHER_TREE [rounds] [seconds]');
  const rounds = Number(roundsArg ?? 4);
  const seconds = Number(secondsArg ?? 3);
  const otherProc = (await import(
    pathToFileURL(join(other, 'dist', 'bench', 'lib', 'proc.js')).href
  )) as { startHub: Start };
  const plugins = [join(ROOT, 'bench', 'plugins')];
  const hubs: Record<'other' | 'this', Proc> = {
    other: await otherProc.startHub('other', { plugins, watch: false }),
    this: await startHub('this', { plugins, watch: false }),
  };
  try {
    const specs: Record<string, RequestSpec> = {};
    for (const [k, h] of Object.entries(hubs)) {
      specs[`modern ${k}`] = echoCall(h.url, 'modern');
      specs[`legacy ${k}`] = echoCall(h.url, 'legacy', await openSession(h.url));
    }
    for (const s of Object.values(specs)) await runWrk(s, { connections: 50, seconds: 2 });
    const acc = new Map<string, Acc>();
    for (let r = 0; r < rounds; r++) {
      const order = r % 2 === 0 ? (['other', 'this'] as const) : (['this', 'other'] as const);
      for (const era of ERAS)
        for (const k of order) {
          const pid = hubs[k].child.pid!;
          const before = perThread(pid);
          const sample = await runWrk(specs[`${era} ${k}`]!, { connections: 50, seconds });
          let mainMs = 0;
          let otherMs = 0;
          for (const [tid, ms] of perThread(pid)) {
            const d = ms - (before.get(tid) ?? 0);
            if (tid === String(pid)) mainMs += d;
            else otherMs += d;
          }
          const a = acc.get(`${era} ${k}`) ?? { requests: 0, mainMs: 0, otherMs: 0, rps: [] };
          a.requests += sample.requests;
          a.mainMs += mainMs;
          a.otherMs += otherMs;
          a.rps.push(Math.round(sample.rps));
          acc.set(`${era} ${k}`, a);
        }
    }
    const us = (ms: number, n: number) => ((ms * 1000) / n).toFixed(1);
    for (const [k, a] of acc)
      console.log(
        `${k}: req/s ${a.rps.join(', ')}; main thread ${us(a.mainMs, a.requests)} µs/req, ` +
          `other threads ${us(a.otherMs, a.requests)} µs/req`,
      );
  } finally {
    await hubs.other.stop();
    await hubs.this.stop();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
