/**
 * Starts a real `moonhub serve` process (bin/moonhub.js) for end-to-end tests, on a free port,
 * and collects its stderr log so tests can wait for plugin events.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { cpSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root (this file runs from dist/test/helpers/). */
export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
export const BIN = join(ROOT, 'bin', 'moonhub.js');

/**
 * How long a hub may take to say it serves. `--workers 2` with two plugins starts seven
 * isolates (primary, workers, plugin threads), 5-10 s on this 2-core box under load and past
 * 20 s (the bound before) when another test file runs beside it (2 of 10 runs of
 * test/reliability/resource-update-flood).
 */
const START_TIMEOUT_MS = 60_000;

export interface MoonhubProcess {
  url: string;
  child: ChildProcess;
  /** Everything the process wrote to stderr so far. */
  log: () => string;
  alive: () => boolean;
  /** Resolves when the log matches `re` (checked from `from`, an earlier log length). */
  waitForLog: (re: RegExp, from?: number, timeoutMs?: number) => Promise<string>;
  stop: () => Promise<void>;
}

export async function startMoonhub(
  args: string[],
  env: Record<string, string> = {},
  nodeArgs: string[] = [],
): Promise<MoonhubProcess> {
  const child = spawn(process.execPath, [...nodeArgs, BIN, 'serve', '--port', '0', ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, MOONHUB_LOG_LEVEL: 'debug', ...env },
  });
  let err = '';
  let exited = false;
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  child.once('exit', () => (exited = true));
  const url = await new Promise<string>((resolveUrl, reject) => {
    const timer = setTimeout(() => {
      // A hub left running keeps the test's process alive: the file then hangs until the
      // runner's timeout instead of failing here.
      child.kill('SIGKILL');
      reject(new Error(`moonhub did not start within ${START_TIMEOUT_MS} ms:\n${err}`));
    }, START_TIMEOUT_MS);
    const onData = () => {
      const m = /serving MCP at (\S+)/.exec(err);
      if (m) {
        clearTimeout(timer);
        child.stderr!.off('data', onData);
        resolveUrl(m[1]!);
      }
    };
    child.stderr!.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`moonhub exited (${code}):\n${err}`));
    });
  });
  const waitForLog = async (re: RegExp, from = 0, timeoutMs = 10_000): Promise<string> => {
    const start = Date.now();
    for (;;) {
      const m = re.exec(err.slice(from));
      if (m) return m[0];
      if (Date.now() - start > timeoutMs)
        throw new Error(`timed out waiting for ${re} in the log:\n${err.slice(from)}`);
      await new Promise((r) => setTimeout(r, 25));
    }
  };
  return {
    url,
    child,
    log: () => err,
    alive: () => !exited,
    waitForLog,
    stop: async () => {
      if (exited) return;
      const done = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await done;
    },
  };
}

/** A scratch copy of a plugins directory that a test may edit. */
export function copyPlugins(from: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'moonhub-plugins-'));
  cpSync(from, dir, { recursive: true });
  return dir;
}
