/**
 * The direct path's lean HTTP/1.1 client (src/upstream/raw-http.ts) against real servers: a
 * node:http server (Content-Length, chunked and close-delimited bodies, keep-alive reuse, an idle
 * socket the server closed, `Connection: close`, 100 Continue) and a raw TCP server for answers
 * node:http would refuse too (not HTTP, a bad chunk size, an answer cut off).
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import {
  createServer as createTcpServer,
  type AddressInfo,
  type Socket,
  type Server as TcpServer,
} from 'node:net';
import { after, before, describe, it } from 'node:test';
import { DEFAULT_PLUGIN_LIMITS } from '../../src/lua-api/plugin-limits.js';
import {
  DEFAULT_PIPELINE_DEPTH,
  RawHttpPool,
  type RawExchange,
  type RawRequest,
} from '../../src/upstream/raw-http.js';

interface Outcome {
  status?: number;
  type?: string;
  body: string;
  error?: Error & { code?: string };
  answered?: boolean;
  reused?: boolean;
}

/** One POST through `pool`; resolves when it ended or failed. */
function post(pool: RawHttpPool, path = '/', body = '{}'): Promise<Outcome> {
  return postRaw(pool, path, body).done;
}

/** One POST, and its request (to cancel it). */
function postRaw(
  pool: RawHttpPool,
  path = '/',
  body = '{}',
): { req: RawRequest; done: Promise<Outcome> } {
  let req: RawRequest | undefined;
  const done = new Promise<Outcome>((resolve) => {
    const out: Outcome = { body: '' };
    const chunks: Buffer[] = [];
    const x: RawExchange = {
      onHead(status, _text, type) {
        out.status = status;
        out.type = type;
      },
      onBody: (c) => chunks.push(Buffer.from(c)),
      onEnd() {
        out.body = Buffer.concat(chunks).toString();
        resolve(out);
      },
      onFail(err, answered, reused) {
        Object.assign(out, { error: err, answered, reused });
        resolve(out);
      },
    };
    req = pool.post(
      `POST ${path} HTTP/1.1\r\nhost: x\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n`,
      body,
      x,
    );
  });
  return { req: req!, done };
}

describe('the lean HTTP client', () => {
  let server: Server;
  let pool: RawHttpPool;
  let connections = 0;

  before(async () => {
    server = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        const path = req.url ?? '/';
        if (path === '/chunked') {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.write('{"a":');
          res.end('"ü✓"}');
        } else if (path === '/close') {
          res.writeHead(200, { 'content-type': 'text/plain', connection: 'close' });
          res.end('bye');
        } else if (path === '/continue') {
          res.writeContinue();
          res.writeHead(200, { 'content-type': 'text/plain' }).end('after 100');
        } else if (path === '/empty') {
          res.writeHead(204).end();
        } else res.writeHead(200, { 'content-type': 'text/plain' }).end(`ok ${path}`);
      });
    });
    server.on('connection', () => connections++);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    pool = new RawHttpPool('127.0.0.1', (server.address() as AddressInfo).port);
  });

  after(async () => {
    pool.close();
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
  });

  it('reads Content-Length, chunked and empty bodies and reuses one socket', async () => {
    const start = connections;
    assert.deepEqual(await post(pool, '/a'), { status: 200, type: 'text/plain', body: 'ok /a' });
    const chunked = await post(pool, '/chunked');
    assert.equal(chunked.body, '{"a":"ü✓"}');
    assert.equal((await post(pool, '/empty')).status, 204);
    assert.equal((await post(pool, '/continue')).body, 'after 100');
    assert.equal(connections, start + 1, 'one socket for four requests');
  });

  it('opens a socket per concurrent request and keeps them for the next ones', async () => {
    const start = connections;
    const all = await Promise.all(Array.from({ length: 20 }, (_, i) => post(pool, `/c${i}`)));
    assert.deepEqual(
      all.map((o) => o.body),
      all.map((_, i) => `ok /c${i}`),
    );
    const opened = connections - start;
    assert.ok(opened <= 20, `${opened} sockets`);
    await Promise.all(Array.from({ length: 20 }, (_, i) => post(pool, `/d${i}`)));
    assert.equal(connections - start, opened, 'the second wave reused them');
  });

  it('does not reuse a socket after Connection: close, nor one the server closed while idle', async () => {
    const own = new RawHttpPool('127.0.0.1', (server.address() as AddressInfo).port);
    const start = connections;
    assert.equal((await post(own, '/close')).body, 'bye');
    assert.equal((await post(own, '/after-close')).body, 'ok /after-close');
    assert.equal(connections, start + 2, 'a new socket after Connection: close');
    server.closeIdleConnections();
    await new Promise((r) => setTimeout(r, 100));
    assert.equal((await post(own, '/after-idle')).body, 'ok /after-idle');
    assert.equal(connections, start + 3, 'a new socket after the server closed the idle one');
    own.close();
  });
});

describe('the lean HTTP client and broken answers', () => {
  let tcp: TcpServer;
  let pool: RawHttpPool;
  /** What the server writes for the next request, then whether it closes. */
  let answer: { bytes: string; close: boolean } = { bytes: '', close: false };

  before(async () => {
    tcp = createTcpServer((socket) => {
      socket.on('error', () => undefined);
      socket.once('data', () => {
        if (answer.close) socket.end(answer.bytes);
        else socket.write(answer.bytes);
      });
    });
    await new Promise<void>((r) => tcp.listen(0, '127.0.0.1', r));
    pool = new RawHttpPool('127.0.0.1', (tcp.address() as AddressInfo).port);
  });

  after(async () => {
    pool.close();
    await new Promise<void>((r) => tcp.close(() => r()));
  });

  it('reads a close-delimited body to the end', async () => {
    answer = {
      bytes: 'HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\n\r\nuntil close',
      close: true,
    };
    assert.equal((await post(pool)).body, 'until close');
  });

  it('fails clearly on what is not HTTP, a bad chunk size, and an answer cut off', async () => {
    answer = { bytes: 'SSH-2.0-nope\r\n\r\n', close: false };
    assert.match(
      (await post(pool)).error?.message ?? '',
      /bad answer from the upstream: not an HTTP/,
    );
    answer = {
      bytes: 'HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n',
      close: false,
    };
    assert.match((await post(pool)).error?.message ?? '', /bad chunk size/);
    // Endless trailers (or framing far larger than the data) end the answer, not the call's timeout.
    answer = {
      bytes:
        'HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n' +
        'x-pad: yyyyyyyyyyyyyyyyyyyyyyyyyyyyyy\r\n'.repeat(3000),
      close: false,
    };
    assert.match((await post(pool)).error?.message ?? '', /too many chunk lines or trailers/);
    answer = { bytes: 'HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nabc', close: true };
    const cut = await post(pool);
    assert.equal(cut.answered, true);
    assert.equal(cut.error?.code, 'ECONNRESET');
    answer = { bytes: '', close: true };
    const none = await post(pool);
    assert.equal(none.answered, false, 'closed before any answer: the call may be retried');
  });
});

/** Resolves after the pool's next write (requests of one turn go out in a setImmediate). */
const written = () => new Promise((r) => setImmediate(r));
const settled = (p: Promise<Outcome>, ms: number) =>
  Promise.race([p, new Promise<'pending'>((r) => setTimeout(() => r('pending'), ms))]);

describe('the lean HTTP client, pipelining', () => {
  let server: Server;
  let pool: RawHttpPool;
  let connections = 0;
  let closed = 0;
  let pipelined = 0;
  const seen: string[] = [];

  before(async () => {
    const waiting = new WeakMap<object, number>();
    server = createServer((req, res) => {
      const n = waiting.get(req.socket) ?? 0;
      if (n > 0) pipelined++;
      waiting.set(req.socket, n + 1);
      res.on('finish', () => waiting.set(req.socket, (waiting.get(req.socket) ?? 1) - 1));
      req.resume();
      req.on('end', () => {
        const path = req.url ?? '/';
        seen.push(path);
        const slow = /^\/slow\/(\d+)/.exec(path);
        setTimeout(
          () => res.writeHead(200, { 'content-type': 'text/plain' }).end(`ok ${path}`),
          slow === null ? 0 : Number(slow[1]),
        );
      });
    });
    server.on('connection', (s) => {
      connections++;
      s.on('close', () => closed++);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    pool = new RawHttpPool('127.0.0.1', (server.address() as AddressInfo).port);
    // The first answer shows the server keeps connections alive: pipelining starts after it.
    assert.equal((await post(pool, '/prime')).body, 'ok /prime');
  });

  after(async () => {
    pool.close();
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
  });

  it('writes the requests of one turn on one socket and matches the answers in order', async () => {
    const start = connections;
    const before = pipelined;
    const paths = ['/slow/150', '/a', '/slow/50', '/b', '/c'];
    const all = await Promise.all(paths.map((p) => post(pool, p)));
    assert.deepEqual(
      all.map((o) => o.body),
      paths.map((p) => `ok ${p}`),
    );
    assert.equal(connections, start, 'the idle socket carried all five');
    assert.equal(pipelined - before, 4, 'four requests written behind the first');
  });

  it('writes up to 16 requests of one turn on one socket by default', async () => {
    // 16, not 8 (session 14): a busy turn's calls in one write instead of two, here and in the
    // upstream's reads (docs/performance.md, "Proxy hop, session 14").
    const start = connections;
    const before = pipelined;
    const all = await Promise.all(Array.from({ length: 16 }, (_, i) => post(pool, `/d${i}`)));
    assert.deepEqual(
      all.map((o) => o.body),
      all.map((_, i) => `ok /d${i}`),
    );
    assert.equal(connections, start, 'the idle socket carried all sixteen');
    assert.equal(pipelined - before, 15, 'fifteen requests written behind the first');
    // And the default a Lua proxy gets when the config says nothing is the same.
    assert.equal(DEFAULT_PLUGIN_LIMITS.upstreamPipeline, DEFAULT_PIPELINE_DEPTH);
    assert.equal(DEFAULT_PIPELINE_DEPTH, 16);
  });

  it('spreads more requests than the depth over several sockets', async () => {
    const own = new RawHttpPool('127.0.0.1', (server.address() as AddressInfo).port, 4);
    await post(own, '/prime-own');
    const start = connections;
    const all = await Promise.all(Array.from({ length: 10 }, (_, i) => post(own, `/s${i}`)));
    assert.deepEqual(
      all.map((o) => o.body),
      all.map((_, i) => `ok /s${i}`),
    );
    assert.equal(connections - start, 2, 'three sockets of at most 4 (one of them reused)');
    own.close();
  });

  it('does not send a request cancelled before its turn ended', async () => {
    const a = postRaw(pool, '/kept');
    const b = postRaw(pool, '/never');
    b.req.destroy();
    assert.equal((await a.done).body, 'ok /kept');
    assert.equal(await settled(b.done, 200), 'pending', 'no callback after destroy');
    assert.ok(!seen.includes('/never'));
  });

  it('skips the answer of a cancelled request that others wait behind', async () => {
    const a = postRaw(pool, '/slow/100');
    const b = postRaw(pool, '/behind');
    await written();
    a.req.destroy();
    assert.equal((await b.done).body, 'ok /behind');
    assert.equal(await settled(a.done, 100), 'pending', 'no callback after destroy');
  });

  it('closes the socket of a cancelled request once nothing live shares it', async () => {
    const a = postRaw(pool, '/slow/100');
    const b = postRaw(pool, '/slow/5000');
    await written();
    const before = closed;
    b.req.destroy();
    assert.equal((await a.done).body, 'ok /slow/100');
    for (let i = 0; i < 100 && closed === before; i++) await new Promise((r) => setTimeout(r, 20));
    assert.equal(closed, before + 1, 'the server saw the socket close (the call is cancelled)');
    const lone = postRaw(pool, '/slow/5000');
    await written();
    lone.req.destroy();
    for (let i = 0; i < 100 && closed === before + 1; i++)
      await new Promise((r) => setTimeout(r, 20));
    assert.equal(closed, before + 2, 'a lone request cancelled closes its socket at once');
  });
});

describe('the lean HTTP client, a pipeline cut short', () => {
  let tcp: TcpServer;
  let port: number;
  /** What the server does once it has read `count` requests on a connection. */
  let onRequests: (socket: Socket, count: number) => void = () => undefined;

  before(async () => {
    tcp = createTcpServer((socket) => {
      socket.on('error', () => undefined);
      let text = '';
      socket.on('data', (d: Buffer) => {
        text += d.toString('latin1');
        onRequests(socket, text.split('POST ').length - 1);
      });
    });
    await new Promise<void>((r) => tcp.listen(0, '127.0.0.1', r));
    port = (tcp.address() as AddressInfo).port;
  });

  after(async () => {
    await new Promise<void>((r) => tcp.close(() => r()));
  });

  const OK = 'HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok';

  /** A pool whose socket carried one answer (so it pipelines), then three requests on it. */
  async function threeAfterOne(last: (socket: Socket) => void) {
    const pool = new RawHttpPool('127.0.0.1', port);
    onRequests = (socket, count) => {
      if (count === 1) socket.write(OK);
      if (count === 4) last(socket);
    };
    assert.equal((await post(pool)).body, 'ok');
    const out = await Promise.all([post(pool), post(pool), post(pool)]);
    pool.close();
    return out;
  }

  it('fails the requests behind an answer when the connection drops, never retried', async () => {
    const [first, second, third] = await threeAfterOne((s) => {
      s.write(OK);
      setTimeout(() => s.destroy(), 20);
    });
    assert.equal(first!.body, 'ok');
    for (const o of [second!, third!]) {
      assert.equal(o.error?.code, 'ECONNRESET');
      assert.equal(o.answered, false);
      assert.equal(o.reused, false, 'an answer came on the socket: they may have run');
    }
  });

  it('lets the requests behind an answer that announced close go again', async () => {
    const [first, second, third] = await threeAfterOne((s) =>
      s.end('HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok'),
    );
    assert.equal(first!.body, 'ok');
    for (const o of [second!, third!]) {
      assert.equal(o.answered, false);
      assert.equal(o.reused, true, 'RFC 9112 §9.6: not processed, may be retried');
    }
  });

  it('lets a reused socket closed before any answer byte go again (the keep-alive race)', async () => {
    const [a, b, c] = await threeAfterOne((s) => s.destroy());
    for (const o of [a!, b!, c!]) assert.equal(o.reused, true);
  });
});
