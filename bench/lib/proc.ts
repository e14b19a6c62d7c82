/** Child processes the bench compares: starting them on 127.0.0.1, their RSS, stopping them. */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root (this file runs from dist/bench/lib/). */
export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
export const BIN = join(ROOT, 'bin', 'moonhub.js');
export const DIST_BENCH = join(ROOT, 'dist', 'bench');

export interface HeapReport {
  heapUsed: number;
  external: number;
  arrayBuffers: number;
  rss: number;
}

export interface Proc {
  name: string;
  child: ChildProcess;
  /** The MCP endpoint (HTTP servers only). */
  url: string;
  /** Everything the process wrote to stderr so far. */
  log(): string;
  /** Resident set size now, from /proc (0 once the process is gone). */
  rss(): number;
  /** CPU time (user + system) the process used so far, in ms, from /proc. */
  cpuMs(): number;
  /** Full GC in the child and its memory after it (hubs started with the probe only). */
  heap(): Promise<HeapReport>;
  stop(): Promise<void>;
}

export function rssOf(pid: number | undefined): number {
  if (pid === undefined) return 0;
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

const TICK_MS = 1000 / 100; // Linux reports CPU times in USER_HZ ticks, 100 per second.

/** CPU time of process `pid` (or of its thread `tid`: the main thread's tid is the pid), in ms. */
export function cpuMsOf(pid: number | undefined, tid?: number): number {
  if (pid === undefined) return 0;
  try {
    const path = tid === undefined ? `/proc/${pid}/stat` : `/proc/${pid}/task/${tid}/stat`;
    const stat = readFileSync(path, 'utf8');
    // Fields after the command name (which may hold spaces) start after the last ')'.
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) * TICK_MS;
  } catch {
    return 0;
  }
}

function wrap(name: string, child: ChildProcess, url: string, log: () => string): Proc {
  let exited = child.exitCode !== null;
  const exit = new Promise<void>((r) =>
    child.once('exit', () => {
      exited = true;
      r();
    }),
  );
  return {
    name,
    child,
    url,
    log,
    rss: () => (exited ? 0 : rssOf(child.pid)),
    cpuMs: () => (exited ? 0 : cpuMsOf(child.pid)),
    heap: () =>
      new Promise((res, rej) => {
        if (child.send === undefined) return rej(new Error(`${name} has no probe channel`));
        const timer = setTimeout(() => rej(new Error(`${name}: no heap report`)), 30_000);
        const onMsg = (m: unknown) => {
          const heap = (m as { heap?: HeapReport }).heap;
          if (heap === undefined) return;
          clearTimeout(timer);
          child.off('message', onMsg);
          res(heap);
        };
        child.on('message', onMsg);
        child.send('heap');
      }),
    stop: async () => {
      if (exited) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exit;
      clearTimeout(timer);
    },
  };
}

function waitFor(
  child: ChildProcess,
  text: () => string,
  re: RegExp,
  what: string,
  timeoutMs = 60_000,
): Promise<RegExpExecArray> {
  return new Promise((res, rej) => {
    const check = () => {
      const m = re.exec(text());
      if (m) {
        cleanup();
        res(m);
      }
    };
    const onExit = (code: number | null) => {
      cleanup();
      rej(new Error(`${what} exited (${code}) before it was ready:\n${text()}`));
    };
    const timer = setTimeout(() => {
      cleanup();
      rej(new Error(`${what} was not ready after ${timeoutMs} ms:\n${text()}`));
    }, timeoutMs);
    const cleanup = () => {
      clearTimeout(timer);
      child.stdout?.off('data', check);
      child.stderr?.off('data', check);
      child.off('exit', onExit);
    };
    child.stdout?.on('data', check);
    child.stderr?.on('data', check);
    child.once('exit', onExit);
    check();
  });
}

/** A bench server script from dist/bench/servers that prints `listening <port>`. */
export async function startScript(
  name: string,
  script: string,
  args: string[],
  nodeArgs: string[] = [],
): Promise<Proc> {
  const child = spawn(
    process.execPath,
    [...nodeArgs, join(DIST_BENCH, 'servers', script), ...args],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const m = await waitFor(child, () => out, /listening (\d+)/, name);
  return wrap(name, child, `http://127.0.0.1:${m[1]}/mcp`, () => out);
}

export interface HubOptions {
  plugins: string[];
  /** Serve stdio instead of HTTP; the caller drives child.stdin/stdout. */
  stdio?: boolean;
  watch?: boolean;
  /** `--expose-gc` plus the IPC probe (heap()). */
  probe?: boolean;
  /** Extra node flags, e.g. `--cpu-prof`. */
  nodeArgs?: string[];
  logLevel?: string;
  /** A config file (`--config`). */
  config?: string;
}

/** A real `bin/moonhub.js serve` process. */
export async function startHub(name: string, opts: HubOptions): Promise<Proc> {
  const nodeArgs = [...(opts.nodeArgs ?? [])];
  if (opts.probe) {
    nodeArgs.push('--expose-gc', '--import', join(DIST_BENCH, 'servers', 'hub-probe.js'));
  }
  const args = [BIN, 'serve', '--log-level', opts.logLevel ?? 'warn'];
  for (const p of opts.plugins) args.push('--plugins', p);
  if (opts.watch === false) args.push('--no-watch');
  if (opts.config !== undefined) args.push('--config', opts.config);
  if (opts.stdio) args.push('--stdio');
  else args.push('--port', '0');
  const child = spawn(process.execPath, [...nodeArgs, ...args], {
    stdio: [
      opts.stdio ? 'pipe' : 'ignore',
      'pipe',
      'pipe',
      ...(opts.probe ? ['ipc' as const] : []),
    ],
  });
  let err = '';
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  if (opts.stdio) {
    await waitFor(child, () => err, /serving MCP on stdio/, name);
    return wrap(name, child, '', () => err);
  }
  child.stdout!.resume();
  const m = await waitFor(child, () => err, /serving MCP at (\S+)/, name);
  return wrap(name, child, m[1]!, () => err);
}
