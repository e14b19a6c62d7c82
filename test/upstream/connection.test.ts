/**
 * The upstream layer's pieces on their own: globs, definition hashes, command-line splitting, and
 * UpstreamConnection against a real (misbehaving) node:http server: connect timeout, 401 answered
 * by onAuthError, a refused connection named as such, close stopping the retries.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { UpstreamConnection } from '../../src/upstream/connection.js';
import { globMatch, toolHash } from '../../src/upstream/proxy.js';
import { splitCommandLine, upstreamKind } from '../../src/upstream/transports.js';
import { refusedUrl, startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream.js';

describe('upstream helpers', () => {
  it('matches globs over whole names', () => {
    assert.ok(globMatch('get-*', 'get-sum'));
    assert.ok(globMatch('*', ''));
    assert.ok(globMatch('a?c', 'abc'));
    assert.ok(!globMatch('get-*', 'xget-sum'));
    assert.ok(globMatch('a.b', 'a.b'));
    assert.ok(!globMatch('a.b', 'axb'), 'dots are literal');
  });

  it('hashes a definition independently of key order, and sees description changes', () => {
    const a = toolHash({
      description: 'd',
      inputSchema: { type: 'object', properties: { x: {} } },
    });
    const b = toolHash({
      inputSchema: { properties: { x: {} }, type: 'object' },
      description: 'd',
    });
    assert.equal(a, b);
    assert.notEqual(
      a,
      toolHash({ description: 'd!', inputSchema: { type: 'object', properties: { x: {} } } }),
    );
  });

  it('splits stdio command lines like a shell, without expansion', () => {
    assert.deepEqual(splitCommandLine(`node "my server.js" --name 'a b' x\\ y $HOME`), [
      'node',
      'my server.js',
      '--name',
      'a b',
      'x y',
      '$HOME',
    ]);
    assert.throws(() => splitCommandLine('node "open'), /unterminated/);
    assert.equal(upstreamKind('stdio:node x'), 'stdio');
    assert.equal(upstreamKind('http://h/sse'), 'sse');
    assert.equal(upstreamKind('https://h/mcp'), 'http');
    assert.throws(() => upstreamKind('ftp://h'), /unsupported upstream address/);
  });
});

describe('UpstreamConnection', () => {
  let fake: FakeUpstream;
  before(async () => {
    fake = await startFakeUpstream();
  });
  after(async () => {
    await fake.close();
  });

  it('gives up connecting to a silent server after connect_timeout', async () => {
    fake.hangAll = true;
    const conn = new UpstreamConnection({
      url: fake.url,
      connectTimeoutMs: 300,
      autoReconnect: false,
    });
    const start = Date.now();
    await assert.rejects(conn.connect(), /time/i);
    assert.ok(Date.now() - start < 5000);
    assert.equal(conn.state, 'disconnected');
    fake.hangAll = false;
    await conn.close();
  });

  it('asks onAuthError for credentials after a 401 and retries', async () => {
    fake.token = 'secret';
    const statuses: number[] = [];
    const conn = new UpstreamConnection({
      url: fake.url,
      token: 'wrong',
      autoReconnect: false,
      onAuthError: async (status) => {
        statuses.push(status);
        return { token: 'secret' };
      },
    });
    const client = await conn.connect();
    const r = await conn.request((c, o) => c.callTool({ name: 'work', arguments: {} }, o));
    assert.equal((r.content as { text: string }[])[0]?.text, 'worked');
    assert.deepEqual(statuses, [401]);
    assert.ok(client);
    await conn.close();
    fake.token = undefined;
  });

  it('fails with the HTTP status when no credentials come', async () => {
    fake.token = 'secret';
    const conn = new UpstreamConnection({ url: fake.url, autoReconnect: false });
    await assert.rejects(conn.connect(), /401/);
    await conn.close();
    fake.token = undefined;
  });

  for (const status of [404, 400]) {
    it(`re-initializes a session the server forgot (${status}) and retries the request once`, async () => {
      fake.unknownSessionStatus = status;
      const conn = new UpstreamConnection({ url: fake.url, autoReconnect: false });
      const call = () => conn.request((c, o) => c.callTool({ name: 'work', arguments: {} }, o));
      await call();
      const inits = () => fake.requests.filter((m) => m === 'initialize').length;
      const before = inits();
      fake.forgetSessions();
      const r = await call();
      assert.equal((r.content as { text: string }[])[0]?.text, 'worked');
      assert.equal(inits(), before + 1, 'one new handshake');
      assert.equal(conn.connects, 2);
      await conn.close();
      assert.equal(fake.requests.at(-1), 'DELETE', 'close ends the session (a 405 is fine)');
      fake.unknownSessionStatus = 404;
    });
  }

  it('names a refused connection and stops retrying once closed', async () => {
    const url = await refusedUrl();
    const conn = new UpstreamConnection({ url, backoffMs: 50 });
    await assert.rejects(conn.connect(), /connection refused by http:\/\/127\.0\.0\.1/);
    await new Promise((r) => setTimeout(r, 300));
    const attempts = conn.attempts;
    assert.ok(attempts >= 2, `retried in the background (${attempts})`);
    await conn.close();
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(conn.attempts, attempts, 'no retries after close');
    assert.equal(conn.state, 'closed');
  });
});
