/**
 * `node dist/bench/ab-proxied.js [OTHER] [rounds] [seconds]`: the `hub-proxied` pair (a Lua echo
 * on one moonhub, called directly and through a second moonhub importing it with `mcp.proxy`), of
 * this tree and optionally of OTHER, side by side in one run. OTHER is another built tree, or
 * `config:FILE`: this tree with FILE as the proxying hub's config (`-`: none). wrk
 * with 50 connections on each target in turn, the order rotating per round. Per target and
 * round: req/s, and per call the CPU (all threads) and the read/write system calls of the
 * proxying hub and of the upstream hub, from /proc. Prints medians and the per-round
 * proxied/direct ratio, which is what the bench's `hub-proxied` row reads (docs/performance.md,
 * "Proxy hop, session 14").
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { cpuMsOf, ROOT, type Proc, type startHub } from './lib/proc.js';
import { echoCall, type RequestSpec } from './lib/rpc.js';
import { median } from './lib/stats.js';
import { runWrk } from './lib/wrk.js';
import { toolNames, type startProxyHub } from './scenarios/throughput.js';

interface TreeApi {
  startHub: typeof startHub;
  startProxyHub: typeof startProxyHub;
}

/** syscr / syscw of a process so far. */
function syscalls(pid: number): { r: number; w: number } {
  const io = readFileSync(`/proc/${pid}/io`, 'utf8');
  return { r: Number(/syscr: (\d+)/.exec(io)![1]), w: Number(/syscw: (\d+)/.exec(io)![1]) };
}

interface Pair {
  tree: string;
  upstream: Proc;
  proxying: Proc;
  direct: RequestSpec;
  proxied: RequestSpec;
}

interface Reading {
  rps: number;
  /** µs of CPU per call: wrk, the proxying hub (proxied only) and the upstream. */
  wrkUs: number;
  proxyUs: number;
  upUs: number;
  proxyR: number;
  proxyW: number;
  upR: number;
  upW: number;
}

async function loadTree(root: string): Promise<TreeApi> {
  const d = join(root, 'dist', 'bench');
  const proc = (await import(pathToFileURL(join(d, 'lib', 'proc.js')).href)) as TreeApi;
  const tp = (await import(pathToFileURL(join(d, 'scenarios', 'throughput.js')).href)) as TreeApi;
  return { startHub: proc.startHub, startProxyHub: tp.startProxyHub };
}

async function startPair(
  tree: string,
  api: TreeApi,
  procs: Proc[],
  config?: string,
): Promise<Pair> {
  const upstream = await api.startHub(`${tree}-up`, {
    plugins: [join(ROOT, 'bench', 'plugins')],
    watch: false,
  });
  procs.push(upstream);
  const started = await api.startProxyHub(upstream.url, 10_000, procs);
  if (!('hub' in started)) throw new Error(`${tree}: ${started.note}`);
  let proxying = started.hub;
  if (config !== undefined) {
    // The same plugin folder, served by a hub started with the config.
    const dir = /--plugins (\S+)/.exec(proxying.child.spawnargs.join(' '))![1]!;
    await proxying.stop();
    proxying = await api.startHub(`${tree}-proxying`, { plugins: [dir], watch: false, config });
    procs.push(proxying);
    for (let i = 0; i < 100 && !(await toolNames(proxying.url)).includes('up.echo'); i++)
      await new Promise((r) => setTimeout(r, 100));
  }
  return {
    tree,
    upstream,
    proxying,
    direct: echoCall(upstream.url, 'modern'),
    proxied: echoCall(proxying.url, 'modern', undefined, 'up.echo'),
  };
}

async function measure(p: Pair, which: 'direct' | 'proxied', seconds: number): Promise<Reading> {
  const up = p.upstream.child.pid!;
  const px = p.proxying.child.pid!;
  const [c0u, c0p, s0u, s0p] = [cpuMsOf(up), cpuMsOf(px), syscalls(up), syscalls(px)];
  const s = await runWrk(which === 'direct' ? p.direct : p.proxied, {
    connections: 50,
    seconds,
    wrkCpu: true,
  });
  const [c1u, c1p, s1u, s1p] = [cpuMsOf(up), cpuMsOf(px), syscalls(up), syscalls(px)];
  const n = s.requests;
  return {
    rps: s.rps,
    wrkUs: ((s.wrkCpuMs ?? NaN) * 1000) / n,
    proxyUs: ((c1p - c0p) * 1000) / n,
    upUs: ((c1u - c0u) * 1000) / n,
    proxyR: (s1p.r - s0p.r) / n,
    proxyW: (s1p.w - s0p.w) / n,
    upR: (s1u.r - s0u.r) / n,
    upW: (s1u.w - s0u.w) / n,
  };
}

const f1 = (x: number) => x.toFixed(1);
const f2 = (x: number) => x.toFixed(2);

async function main(): Promise<void> {
  const [other, roundsArg, secondsArg] = process.argv.slice(2);
  const rounds = Number(roundsArg ?? 5);
  const seconds = Number(secondsArg ?? 3);
  const procs: Proc[] = [];
  try {
    const pairs = [await startPair('this', await loadTree(ROOT), procs)];
    if (other?.startsWith('config:'))
      pairs.push(await startPair('config', await loadTree(ROOT), procs, other.slice(7)));
    else if (other !== undefined && other !== '-')
      pairs.push(await startPair('other', await loadTree(other), procs));
    // Warm-up: the upstream client's code needs seconds of load to reach its last JIT tier.
    for (const p of pairs) {
      await runWrk(p.direct, { connections: 50, seconds: 2 });
      await runWrk(p.proxied, { connections: 50, seconds: 6 });
    }
    const got = new Map<string, Reading[]>();
    const ratios = new Map<string, number[]>();
    // What the rate ratio would be with the machine's CPU the only limit: all CPU per direct
    // call (wrk + upstream) over all CPU per proxied call (wrk + both hubs). Load moves it less.
    const cpuRatios = new Map<string, number[]>();
    const targets = pairs.flatMap((p) =>
      (['direct', 'proxied'] as const).map((w) => [p, w] as const),
    );
    for (let r = 0; r < rounds; r++) {
      const order = targets.map((_, i) => targets[(i + r) % targets.length]!);
      if (r % 2 === 1) order.reverse();
      const round = new Map<string, Reading>();
      for (const [p, w] of order) {
        const reading = await measure(p, w, seconds);
        round.set(`${p.tree} ${w}`, reading);
        got.set(`${p.tree} ${w}`, [...(got.get(`${p.tree} ${w}`) ?? []), reading]);
      }
      for (const p of pairs) {
        const ratio = round.get(`${p.tree} proxied`)!.rps / round.get(`${p.tree} direct`)!.rps;
        ratios.set(p.tree, [...(ratios.get(p.tree) ?? []), ratio]);
        const [d, x] = [round.get(`${p.tree} direct`)!, round.get(`${p.tree} proxied`)!];
        const cpu = (d.wrkUs + d.upUs) / (x.wrkUs + x.proxyUs + x.upUs);
        cpuRatios.set(p.tree, [...(cpuRatios.get(p.tree) ?? []), cpu]);
      }
      console.error(
        `round ${r + 1}: ` +
          pairs
            .map((p) => `${p.tree} ${(ratios.get(p.tree)!.at(-1)! * 100).toFixed(1)} %`)
            .join(', '),
      );
    }
    for (const [k, rs] of got) {
      const m = (sel: (x: Reading) => number) => median(rs.map(sel));
      console.log(
        `${k}: req/s ${Math.round(m((x) => x.rps))} (${rs.map((x) => Math.round(x.rps)).join(' ')}); ` +
          `wrk ${f1(m((x) => x.wrkUs))} µs; upstream ${f1(m((x) => x.upUs))} µs, r ${f2(m((x) => x.upR))} w ${f2(m((x) => x.upW))}` +
          (k.endsWith('proxied')
            ? `; proxying ${f1(m((x) => x.proxyUs))} µs, r ${f2(m((x) => x.proxyR))} w ${f2(m((x) => x.proxyW))}`
            : ''),
      );
    }
    const pc = (rs: number[]) =>
      `${(median(rs) * 100).toFixed(1)} % (${rs.map((x) => (x * 100).toFixed(1)).join(' ')})`;
    for (const [tree, rs] of ratios)
      console.log(
        `${tree}: proxied/direct by req/s ${pc(rs)}; by CPU per call ${pc(cpuRatios.get(tree)!)}`,
      );
  } finally {
    for (const p of procs) await p.stop();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
