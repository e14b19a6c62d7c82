/**
 * wrk, the load generator: installed from Debian's packages when missing, driven with a
 * generated Lua script that numbers each request's JSON-RPC id, its output parsed into a Sample.
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { RequestSpec } from './rpc.js';
import type { Sample } from './stats.js';
import { scratchDir } from './tmp.js';

function hasWrk(): boolean {
  return spawnSync('wrk', ['--version'], { stdio: 'ignore' }).error === undefined;
}

/** Makes sure `wrk` is on PATH, installing Debian's package (as root or through sudo). */
export function ensureWrk(): void {
  if (hasWrk()) return;
  process.stderr.write('bench: wrk is missing; installing it with apt-get\n');
  const asRoot = process.getuid?.() === 0;
  const run = (args: string[]) =>
    execFileSync(asRoot ? args[0]! : 'sudo', asRoot ? args.slice(1) : ['-n', ...args], {
      stdio: 'inherit',
      env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
    });
  try {
    run(['apt-get', 'install', '-y', '--no-install-recommends', 'wrk']);
  } catch {
    run(['apt-get', 'update']);
    run(['apt-get', 'install', '-y', '--no-install-recommends', 'wrk']);
  }
  if (!hasWrk()) throw new Error('wrk could not be installed (apt-get install wrk)');
}

let scriptDir: string | undefined;
let scriptCount = 0;

function luaString(s: string): string {
  let eq = '';
  while (s.includes(`]${eq}]`)) eq += '=';
  return `[${eq}[${s}]${eq}]`;
}

function writeScript(s: RequestSpec): string {
  const lines = ['wrk.method = "POST"'];
  for (const [k, v] of Object.entries(s.headers)) {
    lines.push(`wrk.headers[ ${luaString(k)} ] = ${luaString(v)}`);
  }
  lines.push(
    `local prefix = ${luaString(s.prefix)}`,
    `local suffix = ${luaString(s.suffix)}`,
    'local n = 0',
    'request = function()',
    '  n = n + 1',
    '  return wrk.format(nil, nil, nil, prefix .. n .. suffix)',
    'end',
  );
  scriptDir ??= scratchDir('wrk');
  const file = join(scriptDir, `req-${++scriptCount}.lua`);
  writeFileSync(file, lines.join('\n') + '\n');
  return file;
}

const UNIT_MS: Record<string, number> = { us: 0.001, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

function ms(text: string): number {
  const m = /^([\d.]+)(us|ms|s|m|h)$/.exec(text);
  if (!m) throw new Error(`wrk: cannot read the time "${text}"`);
  return Number(m[1]) * UNIT_MS[m[2]!]!;
}

export function parseWrk(out: string): Sample {
  const rps = /Requests\/sec:\s+([\d.]+)/.exec(out);
  const p50 = /^\s*50%\s+(\S+)/m.exec(out);
  const p99 = /^\s*99%\s+(\S+)/m.exec(out);
  const total = /(\d+) requests in/.exec(out);
  if (!rps || !p50 || !p99 || !total) throw new Error(`wrk: unexpected output:\n${out}`);
  let errors = 0;
  const non2xx = /Non-2xx or 3xx responses:\s+(\d+)/.exec(out);
  if (non2xx) errors += Number(non2xx[1]);
  const sock = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out);
  if (sock) errors += Number(sock[1]) + Number(sock[2]) + Number(sock[3]) + Number(sock[4]);
  return {
    rps: Number(rps[1]),
    p50Ms: ms(p50[1]!),
    p99Ms: ms(p99[1]!),
    requests: Number(total[1]),
    errors,
  };
}

export interface WrkRun {
  connections: number;
  seconds: number;
  /** A request taking longer counts as a timeout error (default 10 s). */
  timeoutS?: number;
  /** Also take wrk's own CPU time (`Sample.wrkCpuMs`), from bash's `times` after it exits. */
  wrkCpu?: boolean;
}

/** Children's user + system ms from bash's `times` (its last line: `0m1.234s 0m0.567s`). */
function childrenMs(out: string): number | undefined {
  const m = /(\d+)m([\d.]+)s (\d+)m([\d.]+)s\s*$/.exec(out);
  if (!m) return undefined;
  return (Number(m[1]) * 60 + Number(m[2]) + Number(m[3]) * 60 + Number(m[4])) * 1000;
}

/** Runs wrk (one thread) against `s` and parses its report. */
export function runWrk(s: RequestSpec, run: WrkRun): Promise<Sample> {
  const args = [
    '-t1',
    `-c${run.connections}`,
    `-d${run.seconds}s`,
    `--timeout`,
    `${run.timeoutS ?? 10}s`,
    '--latency',
    '-s',
    writeScript(s),
    s.url,
  ];
  return new Promise((res, rej) => {
    const child = run.wrkCpu
      ? spawn('bash', ['-c', 'wrk "$@"; s=$?; times; exit $s', 'wrk', ...args], {
          stdio: ['ignore', 'pipe', 'pipe'],
        })
      : spawn('wrk', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    child.once('error', rej);
    child.once('exit', (code) => {
      if (code !== 0) return rej(new Error(`wrk exited ${code}:\n${out}`));
      try {
        const sample = parseWrk(out);
        const ms = run.wrkCpu ? childrenMs(out) : undefined;
        res(ms === undefined ? sample : { ...sample, wrkCpuMs: ms });
      } catch (err) {
        rej(err);
      }
    });
  });
}
