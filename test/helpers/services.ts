/**
 * Real redis-server and nginx for the cluster tests, from the machine's Debian packages (.ci/run
 * installs them): each on a free 127.0.0.1 port, in its own temporary folder, with no
 * persistence, stopped by the test. Without the binary a test is skipped, except under CI.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export function which(bin: string): string | undefined {
  for (const dir of ['/usr/bin', '/usr/sbin', '/usr/local/bin', '/usr/local/sbin']) {
    if (existsSync(join(dir, bin))) return join(dir, bin);
  }
  const r = spawnSync('sh', ['-c', `command -v ${bin}`], { encoding: 'utf8' });
  return r.status === 0 && r.stdout.trim() !== '' ? r.stdout.trim() : undefined;
}

/** `skip` for node:test when the binary is missing (never under CI: there it must be). */
export function skipWithout(bin: string): string | false {
  if (which(bin) !== undefined || process.env.CI === 'true') return false;
  return `${bin} is not installed (apt-get install ${bin === 'redis-server' ? 'redis-server' : bin})`;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

export interface Service {
  url: string;
  port: number;
  child: ChildProcess;
  stop: () => Promise<void>;
}

async function waitFor(
  child: ChildProcess,
  text: () => string,
  ready: RegExp,
  what: string,
  timeoutMs = 15_000,
): Promise<void> {
  const start = Date.now();
  while (!ready.test(text())) {
    if (child.exitCode !== null) throw new Error(`${what} exited (${child.exitCode}):\n${text()}`);
    if (Date.now() - start > timeoutMs) throw new Error(`${what} did not start:\n${text()}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

function stopper(child: ChildProcess, dir: string): () => Promise<void> {
  return async () => {
    if (child.exitCode === null && child.signalCode === null) {
      const done = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await done;
    }
    rmSync(dir, { recursive: true, force: true });
  };
}

/** A redis-server with no persistence, on a free port. */
export async function startRedis(): Promise<Service> {
  const bin = which('redis-server');
  if (bin === undefined)
    throw new Error('redis-server is not installed (apt-get install redis-server)');
  const dir = mkdtempSync(join(tmpdir(), 'moonhub-redis-'));
  const port = await freePort();
  const child = spawn(
    bin,
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
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  await waitFor(child, () => out, /Ready to accept connections/, 'redis-server');
  return { url: `redis://127.0.0.1:${port}`, port, child, stop: stopper(child, dir) };
}

/** nginx in the foreground, round-robin over `upstreams` (host:port), with a generated config. */
export async function startNginx(upstreams: string[]): Promise<Service> {
  const bin = which('nginx');
  if (bin === undefined) throw new Error('nginx is not installed (apt-get install nginx)');
  const dir = mkdtempSync(join(tmpdir(), 'moonhub-nginx-'));
  const port = await freePort();
  writeFileSync(join(dir, 'nginx.conf'), nginxConfig(dir, port, upstreams));
  const child = spawn(bin, ['-p', dir, '-c', join(dir, 'nginx.conf')], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  // nginx says nothing when it starts: wait until the port answers.
  const start = Date.now();
  for (;;) {
    if (child.exitCode !== null) throw new Error(`nginx exited (${child.exitCode}):\n${out}`);
    try {
      await fetch(`http://127.0.0.1:${port}/nginx-ready`);
      break;
    } catch {
      if (Date.now() - start > 15_000) throw new Error(`nginx did not start:\n${out}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  return { url: `http://127.0.0.1:${port}`, port, child, stop: stopper(child, dir) };
}

/** Round-robin, no buffering (SSE), HTTP/1.1 keep-alive to the hubs; also used by the demo. */
export function nginxConfig(dir: string, port: number, upstreams: string[]): string {
  return `daemon off;
worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path ${dir}/body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  upstream moonhub { ${upstreams.map((u) => `server ${u} max_fails=1 fail_timeout=2s;`).join(' ')} keepalive 16; }
  server {
    listen 127.0.0.1:${port};
    client_max_body_size 4m;
    location = /nginx-ready { return 204; }
    location / {
      proxy_pass http://moonhub;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host $http_host;
      proxy_buffering off;
      proxy_read_timeout 1h;
      proxy_next_upstream error timeout;
    }
  }
}
`;
}
