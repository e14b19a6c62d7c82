/** Starts the JS hub fixture as a child process and hands back its URL and a stop function. */
import { spawn, type ChildProcess } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const FIXTURE = join(dirname(fileURLToPath(import.meta.url)), 'js-hub-fixture.js');

export interface HubProcess {
  url: string;
  child: ChildProcess;
  stderr: () => string;
  /** Whether the process is still running. */
  alive: () => boolean;
  stop: () => Promise<void>;
}

export async function startHubProcess(
  args: string[] = [],
  env: Record<string, string> = {},
): Promise<HubProcess> {
  const child = spawn(process.execPath, [FIXTURE, 'http', ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...env },
  });
  let err = '';
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  let exited = false;
  child.once('exit', () => (exited = true));
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`fixture did not start: ${err}`)), 15_000);
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /URL (\S+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]!);
      }
    });
    child.once('exit', (code) => reject(new Error(`fixture exited (${code}): ${err}`)));
  });
  return {
    url,
    child,
    stderr: () => err,
    alive: () => !exited,
    stop: async () => {
      if (exited) return;
      const done = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await done;
    },
  };
}
