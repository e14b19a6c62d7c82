/**
 * `node dist/bench/cluster.js [--seconds=5] [--rounds=3]`: the scale-out rows, in one run so the
 * ratios share the machine's noise. The Lua echo `tools/call` (2026-07-28, wrk, 50 connections)
 * against one process, `--workers 2`, one instance with `--redis`, and `--workers 2 --redis`
 * (medians of interleaved rounds); then the delay from `mcp.resource_updated` on one instance to
 * the notification on another's `subscriptions/listen` stream (p50/p99 of 100 changes).
 * Needs wrk and redis-server (Debian packages). `npm run bench` has these rows too
 * (`bench/scenarios/cluster.ts`, `--only=cluster-...`); this script adds `--workers 2 --redis`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BIN, ROOT } from './lib/proc.js';
import { echoCall } from './lib/rpc.js';
import { notifyDelays, TOUCH_PLUGIN } from './scenarios/cluster.js';
import { median, percentile } from './lib/stats.js';
import { runWrk } from './lib/wrk.js';

const arg = (name: string, dflt: number) =>
  Number(process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1] ?? dflt);
const SECONDS = arg('seconds', 5);
const ROUNDS = arg('rounds', 3);
const children: ChildProcess[] = [];

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

function start(bin: string, args: string[], ready: RegExp): Promise<string> {
  const child = spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  let out = '';
  return new Promise((resolve, reject) => {
    const on = (d: Buffer) => {
      out += d.toString();
      const m = ready.exec(out);
      if (m) resolve(m[1] ?? '');
    };
    child.stdout!.on('data', on);
    child.stderr!.on('data', on);
    child.once('exit', (code) => reject(new Error(`${bin} exited ${code}:\n${out}`)));
  });
}

const hub = (plugins: string, extra: string[]) =>
  start(
    process.execPath,
    [
      BIN,
      'serve',
      '--plugins',
      plugins,
      '--no-watch',
      '--port',
      '0',
      '--log-level',
      'warn',
      ...extra,
    ],
    /serving MCP at (\S+)/,
  );

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'moonhub-bench-cluster-'));
  writeFileSync(join(dir, 'touch.lua'), TOUCH_PLUGIN);
  try {
    const port = await freePort();
    await start(
      'redis-server',
      [
        '--port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--save',
        '',
        '--appendonly',
        'no',
        '--dir',
        dir,
      ],
      /(Ready to accept connections)/,
    );
    const redis = `redis://127.0.0.1:${port}`;
    const plugins = join(ROOT, 'bench', 'plugins');
    const data = (n: string) => ['--data', join(dir, n)];
    const targets: [string, string][] = [
      ['one process', await hub(plugins, data('one'))],
      ['--workers 2', await hub(plugins, [...data('w2'), '--workers', '2'])],
      ['one instance, --redis', await hub(plugins, [...data('r1'), '--redis', redis])],
      [
        '--workers 2 --redis',
        await hub(plugins, [...data('w2r'), '--workers', '2', '--redis', redis]),
      ],
    ];
    const rps = new Map<string, number[]>();
    const p99 = new Map<string, number[]>();
    for (const [, url] of targets)
      await runWrk(echoCall(url, 'modern'), { connections: 50, seconds: 2 });
    for (let r = 0; r < ROUNDS; r++)
      for (const [name, url] of targets) {
        const s = await runWrk(echoCall(url, 'modern'), { connections: 50, seconds: SECONDS });
        if (s.errors > 0) throw new Error(`${name}: ${s.errors} errors`);
        (rps.get(name) ?? rps.set(name, []).get(name)!).push(s.rps);
        (p99.get(name) ?? p99.set(name, []).get(name)!).push(s.p99Ms);
      }
    const ref = median(rps.get('one process')!);
    console.log(`| row | req/s | × one process | p99 ms |\n| --- | ---: | ---: | ---: |`);
    for (const [name] of targets) {
      const m = median(rps.get(name)!);
      console.log(
        `| ${name} | ${Math.round(m)} | ${(m / ref).toFixed(2)}× | ${median(p99.get(name)!).toFixed(2)} |`,
      );
    }
    const [a, b] = await Promise.all([
      hub(dir, [...data('na'), '--redis', redis]),
      hub(dir, [...data('nb'), '--redis', redis]),
    ]);
    const delays = await notifyDelays(a, b, 100);
    console.log(
      `resource update, instance A -> listener on B (Redis): p50 ${percentile(delays, 50).toFixed(1)} ms, p99 ${percentile(delays, 99).toFixed(1)} ms (from the tools/call sent)`,
    );
  } finally {
    for (const c of children) c.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 1500));
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
