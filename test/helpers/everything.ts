/**
 * Starts `@modelcontextprotocol/server-everything` as a real upstream for the tests: over
 * Streamable HTTP on 127.0.0.1 with a free port, or as the stdio command line a proxy spawns.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { ROOT } from './moonhub-process.js';

export const EVERYTHING = join(
  ROOT,
  'node_modules',
  '@modelcontextprotocol',
  'server-everything',
  'dist',
  'index.js',
);
const PRELOAD = join(ROOT, 'test', 'fixtures', 'listen-local.mjs');

/** The `stdio:` address of server-everything, for mcp.proxy. */
export const EVERYTHING_STDIO = `stdio:${process.execPath} ${EVERYTHING} stdio`;

export interface HttpUpstream {
  url: string;
  port: number;
  child: ChildProcess;
  stop: () => Promise<void>;
}

/**
 * server-everything over Streamable HTTP (`/mcp`), or with `transport: 'sse'` over the old
 * HTTP+SSE transport (`/sse`); `port` reuses a port (restart tests).
 */
export async function startEverythingHttp(
  port = 0,
  transport: 'streamableHttp' | 'sse' = 'streamableHttp',
): Promise<HttpUpstream> {
  const child = spawn(process.execPath, ['--import', PRELOAD, EVERYTHING, transport], {
    env: { ...process.env, PORT: String(port) },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let err = '';
  const bound = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`server-everything did not start:\n${err}`)),
      20_000,
    );
    child.stderr!.on('data', (d: Buffer) => {
      err += d.toString();
      const m = /LISTENING (\d+)/.exec(err);
      if (m) {
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`server-everything exited (${code}):\n${err}`));
    });
  });
  let exited = false;
  child.once('exit', () => (exited = true));
  return {
    url: `http://127.0.0.1:${bound}/${transport === 'sse' ? 'sse' : 'mcp'}`,
    port: bound,
    child,
    stop: async () => {
      if (exited) return;
      const done = new Promise((r) => child.once('exit', r));
      child.kill('SIGKILL');
      await done;
    },
  };
}
