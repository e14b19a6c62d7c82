/**
 * `node dist/bench/workers-cpu.js [rounds] [seconds] [--other=TREE] [--node-args=A,B]`: the
 * `cluster-workers2` row's question, answered per thread. One plain hub and one `--workers 2`
 * hub (the Lua echo, 2026-07-28, wrk with one thread and 50 connections, as in
 * bench/scenarios/cluster.ts), measured in alternating order, each round printing the rate and
 * where the CPU went: wrk itself, the primary, each worker's main thread and its other threads
 * (the plugin's thread, V8's GC helpers), the rest of the machine, and how many of wrk's
 * connections each worker holds. With `--other=TREE` (a built checkout) that tree's
 * `--workers 2` hub runs in the same rounds as a third target, for A/B of a change.
 * docs/performance.md "workers, session 14".
 */
import { spawn, execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { startHub, type Proc } from './lib/proc.js';
import { echoCall, type RequestSpec } from './lib/rpc.js';
import { parseWrk, runWrk } from './lib/wrk.js';
import { scratchDir, removeScratchDirs } from './lib/tmp.js';
import { ECHO_PLUGINS } from './scenarios/throughput.js';

type Start = typeof startHub;

/** CPU ms of one thread, or of a whole process when `tid` is omitted (user + system). */
function cpuMs(pid: number, tid?: string): number {
  try {
    const path = tid === undefined ? `/proc/${pid}/stat` : `/proc/${pid}/task/${tid}/stat`;
    const s = readFileSync(path, 'utf8');
    const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) * 10;
  } catch {
    return 0;
  }
}

/** Busy CPU ms of the whole machine (all cores), from /proc/stat. */
function machineBusyMs(): number {
  const f = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1);
  const n = f.map(Number);
  // user nice system idle iowait irq softirq steal: busy is all but idle and iowait.
  return (n[0]! + n[1]! + n[2]! + n[5]! + n[6]! + n[7]!) * 10;
}

/** The processes of a hub: the one started, and its workers (from their ready lines). */
function pidsOf(proc: Proc): { primary: number; workers: number[] } {
  const workers = [...proc.log().matchAll(/worker \d+ \(pid (\d+)/g)].map((m) => Number(m[1]));
  return { primary: proc.child.pid!, workers };
}

/** Voluntary and involuntary context switches of one thread (/proc status). */
function switches(pid: number, tid: string): { vol: number; invol: number } {
  try {
    const s = readFileSync(`/proc/${pid}/task/${tid}/status`, 'utf8');
    const vol = Number(/^voluntary_ctxt_switches:\s+(\d+)/m.exec(s)?.[1] ?? 0);
    const invol = Number(/^nonvoluntary_ctxt_switches:\s+(\d+)/m.exec(s)?.[1] ?? 0);
    return { vol, invol };
  } catch {
    return { vol: 0, invol: 0 };
  }
}

interface Snap {
  main: number;
  other: number;
  vol: number;
  invol: number;
}

/** Per process: main thread ms, other threads' ms, context switches of all its threads. */
function snapshot(pids: number[]): Map<number, Snap> {
  const out = new Map<number, Snap>();
  for (const pid of pids) {
    let main = 0;
    let other = 0;
    let tids: string[] = [];
    try {
      tids = readdirSync(`/proc/${pid}/task`);
    } catch {
      // gone
    }
    let vol = 0;
    let invol = 0;
    for (const t of tids) {
      const ms = cpuMs(pid, t);
      if (t === String(pid)) main += ms;
      else other += ms;
      const sw = switches(pid, t);
      vol += sw.vol;
      invol += sw.invol;
    }
    out.set(pid, { main, other, vol, invol });
  }
  return out;
}

/** Established connections to `port` held by each of `pids` (ss -tnp). */
function connectionsByPid(port: number, pids: number[]): number[] {
  const out = execFileSync('ss', ['-tnpH', 'state', 'established', `( sport = :${port} )`], {
    encoding: 'utf8',
  });
  return pids.map((pid) => out.split('\n').filter((l) => l.includes(`pid=${pid},`)).length);
}

/** wrk as in runWrk, under bash's `times` so its own CPU is known. */
function wrkWithCpu(
  s: RequestSpec,
  connections: number,
  seconds: number,
  during: () => void,
): Promise<{ rps: number; requests: number; wrkMs: number }> {
  const script = join(scratchDir('wrk-cpu'), 'req.lua');
  const lines = ['wrk.method = "POST"'];
  for (const [k, v] of Object.entries(s.headers)) lines.push(`wrk.headers["${k}"] = [[${v}]]`);
  lines.push(
    `local prefix, suffix, n = [[${s.prefix}]], [[${s.suffix}]], 0`,
    'request = function() n = n + 1 return wrk.format(nil, nil, nil, prefix .. n .. suffix) end',
  );
  writeFileSync(script, lines.join('\n') + '\n');
  const args = ['-t1', `-c${connections}`, `-d${seconds}s`, '--latency', '-s', script, s.url];
  return new Promise((res, rej) => {
    const child = spawn('bash', ['-c', 'wrk "$@"; times', 'wrk', ...args]);
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const mid = setTimeout(during, (seconds * 1000) / 2);
    child.once('exit', () => {
      clearTimeout(mid);
      try {
        const sample = parseWrk(out);
        // `times`: the shell's own user/sys, then its children's (wrk's).
        const t = [...out.matchAll(/(\d+)m([\d.]+)s/g)].map(
          (m) => Number(m[1]) * 60 + Number(m[2]),
        );
        const wrkMs = ((t[2] ?? 0) + (t[3] ?? 0)) * 1000;
        res({ rps: sample.rps, requests: sample.requests, wrkMs });
      } catch (err) {
        rej(err as Error);
      }
    });
  });
}

async function clusterHub(
  start: Start,
  name: string,
  cluster: string,
  nodeArgs: string[] = [],
): Promise<Proc> {
  const dir = scratchDir(`workers-cpu-${name}`);
  const config = join(dir, 'moonhub.yaml');
  writeFileSync(config, `data_dir: ${join(dir, 'data')}\n${cluster}`);
  return start(name, { plugins: [ECHO_PLUGINS], watch: false, config, nodeArgs });
}

interface Target {
  id: string;
  proc: Proc;
  spec: RequestSpec;
}

async function main(): Promise<void> {
  const positional = process.argv.slice(2).filter((a) => !a.startsWith('--'));
  const opt = (k: string) => process.argv.find((a) => a.startsWith(`--${k}=`))?.slice(k.length + 3);
  const rounds = Number(positional[0] ?? 5);
  const seconds = Number(positional[1] ?? 4);
  const connections = Number(opt('connections') ?? 50);
  const targets: Target[] = [];
  const add = async (id: string, start: Start, cluster: string, nodeArgs: string[] = []) => {
    const proc = await clusterHub(start, id, cluster, nodeArgs);
    targets.push({ id, proc, spec: echoCall(proc.url, 'modern') });
  };
  try {
    await add('one', startHub, '');
    await add('workers2', startHub, 'cluster: { workers: 2 }\n');
    // `--node-args=a,b`: a third target, `--workers 2` with these node flags (its workers inherit them).
    const nodeArgs = opt('node-args');
    if (nodeArgs !== undefined)
      await add('workers2-args', startHub, 'cluster: { workers: 2 }\n', nodeArgs.split(','));
    const other = opt('other');
    if (other !== undefined) {
      const mod = (await import(
        pathToFileURL(join(other, 'dist', 'bench', 'lib', 'proc.js')).href
      )) as { startHub: Start };
      await add('other-workers2', mod.startHub, 'cluster: { workers: 2 }\n');
    }
    for (const t of targets) await runWrk(t.spec, { connections, seconds: 2 });
    for (let r = 0; r < rounds; r++) {
      const order = targets.map((_, i) => targets[(i + r) % targets.length]!);
      const line: string[] = [];
      for (const t of order) {
        const { primary, workers } = pidsOf(t.proc);
        const pids = [primary, ...workers];
        const before = snapshot(pids);
        const m0 = machineBusyMs();
        let conns: number[] = [];
        const port = Number(new URL(t.spec.url).port);
        const w = await wrkWithCpu(t.spec, connections, seconds, () => {
          conns = connectionsByPid(port, workers.length > 0 ? workers : [primary]);
        });
        const machine = machineBusyMs() - m0;
        const after = snapshot(pids);
        const d = (pid: number) => ({
          main: after.get(pid)!.main - before.get(pid)!.main,
          other: after.get(pid)!.other - before.get(pid)!.other,
          vol: after.get(pid)!.vol - before.get(pid)!.vol,
          invol: after.get(pid)!.invol - before.get(pid)!.invol,
        });
        const wall = seconds * 1000;
        const share = (ms: number) => (ms / wall).toFixed(2);
        let hub = 0;
        let vol = 0;
        let invol = 0;
        const parts: string[] = [];
        if (workers.length > 0) {
          const p = d(primary);
          hub += p.main + p.other;
          parts.push(`primary ${share(p.main + p.other)}`);
        }
        for (const pid of workers.length > 0 ? workers : [primary]) {
          const x = d(pid);
          hub += x.main + x.other;
          vol += x.vol;
          invol += x.invol;
          parts.push(`main ${share(x.main)} + other ${share(x.other)}`);
        }
        const rest = machine - hub - w.wrkMs;
        line.push(
          `${t.id}: ${Math.round(w.rps)} req/s; cores: wrk ${share(w.wrkMs)}, hub ${share(hub)} [${parts.join(' | ')}], rest ${share(rest)}; ` +
            `µs/req hub ${((hub * 1000) / w.requests).toFixed(1)}, wrk ${((w.wrkMs * 1000) / w.requests).toFixed(1)}; switches/req vol ${(vol / w.requests).toFixed(2)} invol ${(invol / w.requests).toFixed(2)}; conns ${conns.join('/')}`,
        );
      }
      console.log(`round ${r + 1} (load ${readFileSync('/proc/loadavg', 'utf8').split(' ')[0]})`);
      for (const l of line) console.log('  ' + l);
    }
  } finally {
    for (const t of targets) await t.proc.stop();
    removeScratchDirs();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
