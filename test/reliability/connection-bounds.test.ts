/**
 * TCP connection bounds (`limits.connections`), against real hubs and real sockets from several
 * loopback addresses (127.0.0.0/8 is all local on Linux): before, a connection that never sent a
 * byte was kept for ever and one client could open as many as the hub had file descriptors
 * (20,000 idle connections locked every client out). Now a connection that sends no request in
 * `headers_ms` is closed, one address holds at most `per_address`, the process at most `total`;
 * other addresses are served, and the refusals are counted.
 */
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, describe, it } from 'node:test';
import { startMoonhub, type MoonhubProcess } from '../helpers/moonhub-process.js';
import { makeHubDir, plainHubFor, type HubDir } from '../helpers/auth-hub.js';
import { sample, scrape } from '../helpers/operations.js';
import { sleep } from './limits-helpers.js';
import { defaultConnectionsTotal } from '../../src/server/connection-guard.js';
import { DEFAULT_LIMITS } from '../../src/server/session-limits.js';

const PLUGIN = `mcp.tool("p.echo", { description = "echo" }, function() return "echo" end)`;

interface Held {
  socket: net.Socket;
  /** Resolves when the hub (or anybody) closed it; the ms it stayed open. */
  closed: Promise<number>;
  /** Whether it is closed now. */
  gone: () => boolean;
}

/** Opens a connection from `from` that sends nothing. */
function hold(port: number, from: string): Promise<Held> {
  return new Promise((ok, fail) => {
    const t0 = performance.now();
    const socket = net.connect({ port, host: '127.0.0.1', localAddress: from });
    let gone = false;
    const closed = new Promise<number>((done) =>
      socket.once('close', () => {
        gone = true;
        done(performance.now() - t0);
      }),
    );
    socket.once('connect', () => ok({ socket, closed, gone: () => gone }));
    socket.once('error', () => {});
    socket.once('error', fail);
  });
}

/** A GET /healthz over a fresh connection from `from`: its status, or 0 when cut. */
function health(port: number, from: string): Promise<number> {
  return new Promise((ok) => {
    const socket = net.connect({ port, host: '127.0.0.1', localAddress: from }, () =>
      socket.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n'),
    );
    let text = '';
    socket.on('data', (d: Buffer) => (text += d.toString()));
    socket.on('error', () => {});
    socket.on('close', () => ok(Number(/^HTTP\/1\.1 (\d+)/.exec(text)?.[1] ?? 0)));
  });
}

/** Whether `held` is still open after `ms`. */
const stillOpen = async (held: Held, ms: number) =>
  (await Promise.race([held.closed.then(() => false), sleep(ms).then(() => true)])) as boolean;

describe('connection bounds', () => {
  let dir: HubDir;
  let hub: MoonhubProcess;
  let port: number;
  let metricsPort: number;
  const sockets: net.Socket[] = [];

  before(async () => {
    dir = makeHubDir({ p: PLUGIN });
    const file = dir.write(
      'moonhub.yaml',
      `plugins: { dirs: [plugins] }
observe: { metrics: { listen: { port: 0 } } }
limits:
  connections: { total: 60, per_address: 20, headers_ms: 1500 }
`,
    );
    hub = await startMoonhub(['--config', file, '--data', dir.data, '--no-watch']);
    port = Number(new URL(hub.url).port);
    metricsPort = Number(new URL(/metrics at (\S+)/.exec(hub.log())![1]!).port);
  });
  after(async () => {
    for (const s of sockets) s.destroy();
    await hub?.stop();
  });

  it('closes a connection that sends no request in headers_ms; a request in time keeps it', async () => {
    const idle = await hold(port, '127.0.0.1');
    const talker = await hold(port, '127.0.0.1');
    sockets.push(idle.socket, talker.socket);
    talker.socket.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
    const ms = await Promise.race([idle.closed, sleep(10_000).then(() => Infinity)]);
    assert.ok(ms > 1_200 && ms < 6_000, `closed after ${ms.toFixed(0)} ms`);
    // The connection that sent a request is kept-alive past headers_ms (Node's 5 s idle rule).
    assert.equal(await stillOpen(talker, 200), true);
    talker.socket.destroy();
  });

  it('bounds one address, leaves the others served, and frees a place when a connection closes', async () => {
    const mine: Held[] = [];
    for (let i = 0; i < 20; i++) mine.push(await hold(port, '127.0.0.2'));
    sockets.push(...mine.map((h) => h.socket));
    // The 21st from the same address is closed at once, before headers_ms.
    const over = await hold(port, '127.0.0.2');
    sockets.push(over.socket);
    assert.equal(await stillOpen(over, 800), false, 'the 21st connection of 127.0.0.2');
    assert.equal(await health(port, '127.0.0.2'), 0, 'its requests are cut too');
    assert.equal(await health(port, '127.0.0.3'), 200, 'another address is served');
    mine.pop()!.socket.destroy();
    await sleep(100);
    assert.equal(await health(port, '127.0.0.2'), 200, 'a closed connection frees its place');
    for (const h of mine) h.socket.destroy();
  });

  it('bounds the separate metrics address alike', async () => {
    const idle = await hold(metricsPort, '127.0.0.10');
    const mine: Held[] = [idle];
    for (let i = 0; i < 19; i++) mine.push(await hold(metricsPort, '127.0.0.10'));
    sockets.push(...mine.map((h) => h.socket));
    assert.equal(await health(metricsPort, '127.0.0.10'), 0, 'the 21st of one address');
    assert.equal(await health(metricsPort, '127.0.0.11'), 200, 'another address');
    const ms = await Promise.race([idle.closed, sleep(10_000).then(() => Infinity)]);
    assert.ok(ms > 1_200 && ms < 6_000, `idle closed after ${ms.toFixed(0)} ms`);
    for (const h of mine) h.socket.destroy();
  });

  it('bounds the process in all; the refusals are counted by limit', async () => {
    await sleep(200);
    const all: Held[] = [];
    for (const from of ['127.0.0.4', '127.0.0.5', '127.0.0.6'])
      for (let i = 0; i < 20; i++) all.push(await hold(port, from));
    sockets.push(...all.map((h) => h.socket));
    const metrics = `http://127.0.0.1:${metricsPort}`;
    const open = async () => sample(await scrape(metrics, undefined), 'moonhub_http_connections');
    assert.equal(await open(), 60, 'moonhub_http_connections');
    assert.equal(await health(port, '127.0.0.7'), 0, 'past the total: closed');
    for (const h of all.splice(0, 5)) h.socket.destroy();
    await sleep(100);
    assert.equal(await health(port, '127.0.0.7'), 200, 'served again once some closed');
    for (const h of all) h.socket.destroy();
    await sleep(100);
    for (let i = 0; i < 40 && (await open()) > 0; i++) await sleep(50);
    assert.equal(await open(), 0, 'moonhub_http_connections once all closed');
    const text = await scrape(metrics, undefined);
    assert.ok(sample(text, 'moonhub_limit_refusals_total', { limit: 'connections' }) >= 1);
    assert.ok(
      sample(text, 'moonhub_limit_refusals_total', { limit: 'connections_per_address' }) >= 2,
    );
  });
});

describe('connection bounds at the defaults', () => {
  const made = plainHubFor({ p: PLUGIN });

  it('one address flooding idle connections is stopped at its share; another is served', async () => {
    const port = Number(new URL(made.hub.url).port);
    // The hub inherits this process's descriptor limit, which sets its defaults.
    const share = DEFAULT_LIMITS.connectionsPerAddress;
    assert.equal(share, Math.max(8, Math.floor(defaultConnectionsTotal() / 2)));
    const held: Held[] = [];
    let cut = 0;
    try {
      // Before, every one was kept (and 20,000 exhausted the descriptors of the hub). Half the
      // default total: 7,404 under this machine's 20,000 descriptors.
      for (let i = 0; i < share + 50; i++) held.push(await hold(port, '127.0.0.8'));
      await sleep(300);
      for (const h of held) if (h.gone()) cut++;
      assert.equal(cut, 50, `${cut} of ${share + 50} cut`);
      assert.equal(await health(port, '127.0.0.9'), 200);
    } finally {
      for (const h of held) h.socket.destroy();
    }
  });
});
