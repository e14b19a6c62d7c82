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
  type Server as TcpServer,
} from 'node:net';
import { after, before, describe, it } from 'node:test';
import { RawHttpPool, type RawExchange } from '../../src/upstream/raw-http.js';

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
  return new Promise((resolve) => {
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
    pool.post(
      `POST ${path} HTTP/1.1\r\nhost: x\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n`,
      body,
      x,
    );
  });
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
    answer = { bytes: 'HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nabc', close: true };
    const cut = await post(pool);
    assert.equal(cut.answered, true);
    assert.equal(cut.error?.code, 'ECONNRESET');
    answer = { bytes: '', close: true };
    const none = await post(pool);
    assert.equal(none.answered, false, 'closed before any answer: the call may be retried');
  });
});
