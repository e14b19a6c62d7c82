/**
 * Bounds on what one client puts in its requests, against a real hub (HTTP with two principals,
 * and stdio): resource subscriptions per session and URI length (the heap stays bounded under a
 * flood of long URIs), subscriptions/listen streams per principal and in total, batch length and
 * request ids. Each refusal is a clear error naming its config key, counted by limit, while the
 * other principal is served and what was already accepted stays.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import { BIN, startMoonhub, type MoonhubProcess } from '../helpers/moonhub-process.js';
import { createSession, makeHubDir, type HubDir, type Issued } from '../helpers/auth-hub.js';
import { adminToken, baseOf, sample, scrape } from '../helpers/operations.js';
import { rssMiB } from './helpers.js';
import {
  initialize,
  inSession,
  listen as listenOn,
  modern,
  ping,
  pool,
  sleep,
} from './limits-helpers.js';

const PLUGIN = `mcp.tool("p.echo", { description = "echo" }, function() return "echo" end)`;
const LIMITS = `
limits:
  subscriptions: { per_session: 50, chars_per_session: 20000 }
  listens: { per_principal: 3, total: 5 }
`;

const subscribe = (url: string, sid: string, token: string | undefined, uri: string, id = 1) =>
  inSession(url, sid, token, {
    jsonrpc: '2.0',
    id,
    method: 'resources/subscribe',
    params: { uri },
  });

describe('request bounds over HTTP, two principals', () => {
  let dir: HubDir;
  let hub: MoonhubProcess;
  let A: Issued;
  let B: Issued;
  let admin: string;
  let url: string;

  before(async () => {
    dir = makeHubDir({ p: PLUGIN });
    const file = dir.write(
      'moonhub.yaml',
      `auth: { mode: token }
plugins: { dirs: [plugins] }
agents:
  A: { plugins: [p], builtins: [] }
  B: { plugins: [p], builtins: [] }
${LIMITS}`,
    );
    hub = await startMoonhub(['--config', file, '--data', dir.data, '--no-watch']);
    url = hub.url;
    const issue = (agent: string) =>
      createSession(['--config', file, '--data', dir.data, '--agent', agent, '--url', url]);
    A = issue('A');
    B = issue('B');
    admin = adminToken(dir.data);
  });
  after(async () => hub?.stop());

  it('caps subscriptions per session; a repeat does not count, unsubscribing makes room', async () => {
    const a = (await initialize(url, A.token)).sid!;
    const b = (await initialize(url, B.token)).sid!;
    for (let i = 0; i < 50; i++)
      assert.equal((await subscribe(url, a, A.token, `p://r/${i}`)).body?.error, undefined);
    const over = await subscribe(url, a, A.token, 'p://r/50');
    assert.equal(over.status, 200);
    assert.equal(over.body?.error?.code, -32602);
    assert.match(over.body!.error!.message, /at most 50 .*\(limits\.subscriptions\.per_session\)/);
    assert.equal((await subscribe(url, a, A.token, 'p://r/7')).body?.error, undefined, 'a repeat');
    // The other principal's session is its own.
    assert.equal((await subscribe(url, b, B.token, 'p://r/50')).body?.error, undefined);
    const unsub = await inSession(url, a, A.token, {
      jsonrpc: '2.0',
      id: 3,
      method: 'resources/unsubscribe',
      params: { uri: 'p://r/0' },
    });
    assert.equal(unsub.body?.error, undefined);
    assert.equal((await subscribe(url, a, A.token, 'p://r/50')).body?.error, undefined);
  });

  it('refuses long subscribed URIs: 300 of 1 MiB leave the heap bounded, B is served meanwhile', async (t) => {
    const a = (await initialize(url, A.token)).sid!;
    const b = (await initialize(url, B.token)).sid!;
    const exact = await subscribe(url, a, A.token, 'p://' + 'x'.repeat(4096 - 4));
    assert.equal(exact.body?.error, undefined, 'a URI of exactly 4096 characters is fine');
    const pid = hub.child.pid!;
    const rss0 = rssMiB(pid);
    let served = 0;
    let slowest = 0;
    let running = true;
    const honest = (async () => {
      while (running) {
        const t0 = performance.now();
        assert.equal((await ping(url, b, B.token)).status, 200);
        slowest = Math.max(slowest, performance.now() - t0);
        served++;
        await sleep(20);
      }
    })();
    let peak = rss0;
    const answers = await pool(300, 4, async (i) => {
      const r = await subscribe(url, a, A.token, `p://${i}/` + 'y'.repeat(1 << 20), i);
      if (i % 20 === 0) peak = Math.max(peak, rssMiB(pid));
      return r;
    });
    running = false;
    await honest;
    const rss1 = rssMiB(pid);
    peak = Math.max(peak, rss1);
    t.diagnostic(
      `300 x 1 MiB subscribe: RSS ${rss0.toFixed(0)} -> peak ${peak.toFixed(0)} -> ${rss1.toFixed(0)} MiB; B served ${served} pings, slowest ${slowest.toFixed(0)} ms`,
    );
    for (const r of answers) {
      assert.equal(r.body?.error?.code, -32602);
      assert.match(
        r.body!.error!.message,
        /at most 4096 characters \(limits\.subscriptions\.uri_length\)/,
      );
    }
    assert.ok(rss1 - rss0 < 120, `RSS grew ${rss1 - rss0} MiB (300 MiB of URIs would be kept)`);
    assert.ok(served > 0 && slowest < 5_000, `B served ${served}, slowest ${slowest} ms`);
  });

  it('caps subscriptions/listen streams per principal and in total', async () => {
    const open: AbortController[] = [];
    const listen = async (token: string, params: Record<string, unknown> = {}) => {
      const answer = await listenOn(url, token, params);
      if (answer.streaming) open.push(answer.ctl);
      return answer;
    };
    try {
      for (let i = 0; i < 3; i++) assert.equal((await listen(A.token)).streaming, true);
      const fourth = await listen(A.token);
      assert.equal(fourth.streaming, false);
      assert.match(fourth.error!.message, /has 3 .*\(limits\.listens\.per_principal\)/);
      // A at its cap does not refuse B.
      assert.equal((await listen(B.token)).streaming, true);
      assert.equal((await listen(B.token)).streaming, true);
      const total = await listen(B.token);
      assert.match(
        total.error!.message,
        /5 subscriptions\/listen streams .*\(limits\.listens\.total\)/,
      );
      // One of A's streams ends: A may open one again.
      open.shift()!.abort();
      let again = await listen(A.token);
      for (let i = 0; i < 50 && !again.streaming; i++) {
        await sleep(50);
        again = await listen(A.token);
      }
      assert.equal(again.streaming, true, 'a closed stream frees its place');
      // A listen's resourceSubscriptions are bounded like a session's.
      open.pop()!.abort();
      await sleep(200);
      const uris = Array.from({ length: 51 }, (_, i) => `p://r/${i}`);
      const many = await listen(B.token, {
        notifications: { resourceSubscriptions: uris },
      });
      assert.equal(many.streaming, false);
      assert.match(many.error!.message, /\(limits\.subscriptions\.per_session\)/);
      // And their characters: six URIs of ~4,000 are more than 20,000.
      const long = Array.from({ length: 6 }, (_, i) => `p://${i}/${'z'.repeat(3990)}`);
      const heavy = await listen(B.token, { notifications: { resourceSubscriptions: long } });
      assert.equal(heavy.streaming, false);
      assert.match(
        heavy.error!.message,
        /at most 20000 characters \(limits\.subscriptions\.chars_per_session\)/,
      );
    } finally {
      for (const c of open) c.abort();
    }
  });

  it('caps batch length and request ids; a bad member of a batch is answered in place', async () => {
    const init = await initialize(url, A.token, '2025-03-26');
    const sid = init.sid!;
    const batch = (n: number) =>
      Array.from({ length: n }, (_, i) => ({ jsonrpc: '2.0', id: i, method: 'ping' }));
    const ok = await inSession(url, sid, A.token, batch(100), '2025-03-26');
    assert.equal(ok.status, 200);
    assert.equal((JSON.parse(ok.text) as unknown[]).length, 100);
    const long = await inSession(url, sid, A.token, batch(101), '2025-03-26');
    assert.equal(long.status, 400);
    assert.equal(long.body?.error?.code, -32600);
    assert.match(
      long.body!.error!.message,
      /at most 100 messages \(limits\.batch_length\); this one has 101/,
    );
    const t0 = performance.now();
    const huge = await inSession(url, sid, A.token, batch(40_000), '2025-03-26');
    assert.equal(huge.status, 400);
    assert.ok(performance.now() - t0 < 5_000, 'a 40,000-message batch is refused at once');

    const longId = 'i'.repeat(257);
    const refused = await ping(url, sid, A.token, longId);
    assert.equal(refused.status, 400);
    assert.equal(refused.body?.id, null, 'the long id is not echoed');
    assert.match(
      refused.body!.error!.message,
      /longer than 256 characters \(limits\.request_id_length\)/,
    );
    assert.equal((await ping(url, sid, A.token, 'i'.repeat(256))).status, 200);
    for (const id of [1.5, 2 ** 53])
      assert.match(
        (await ping(url, sid, A.token, id)).body!.error!.message,
        /must be a string or a safe integer/,
      );
    assert.equal((await modern(url, B.token, 'tools/list', {}, longId)).status, 400, '2026 too');
    const mixed = await inSession(
      url,
      sid,
      A.token,
      [
        { jsonrpc: '2.0', id: 1, method: 'ping' },
        { jsonrpc: '2.0', id: longId, method: 'ping' },
      ],
      '2025-03-26',
    );
    const outs = JSON.parse(mixed.text) as {
      id: unknown;
      result?: unknown;
      error?: { code: number };
    }[];
    assert.deepEqual(outs[0], { jsonrpc: '2.0', id: 1, result: {} });
    assert.equal(outs[1]!.id, null);
    assert.equal(outs[1]!.error!.code, -32600);
  });

  it("caps the characters of a session's subscribed URIs; unsubscribing makes room", async () => {
    // 1,000 URIs of 4,096 characters a session, 1,000 sessions a principal: 20 such sessions
    // took a hub +91 MiB before this bound.
    const a = (await initialize(url, A.token)).sid!;
    const uri = (i: number) => `p://c/${i}/${'w'.repeat(3990)}`; // 3,997 characters
    for (let i = 0; i < 5; i++)
      assert.equal((await subscribe(url, a, A.token, uri(i))).body?.error, undefined);
    const over = await subscribe(url, a, A.token, uri(5));
    assert.equal(over.body?.error?.code, -32602);
    assert.match(
      over.body!.error!.message,
      /at most 20000 characters \(limits\.subscriptions\.chars_per_session\); unsubscribe first/,
    );
    assert.equal((await subscribe(url, a, A.token, uri(2))).body?.error, undefined, 'a repeat');
    // Another session of the same principal has its own.
    const a2 = (await initialize(url, A.token)).sid!;
    assert.equal((await subscribe(url, a2, A.token, uri(5))).body?.error, undefined);
    const unsub = await inSession(url, a, A.token, {
      jsonrpc: '2.0',
      id: 3,
      method: 'resources/unsubscribe',
      params: { uri: uri(0) },
    });
    assert.equal(unsub.body?.error, undefined);
    assert.equal((await subscribe(url, a, A.token, uri(5))).body?.error, undefined);
  });

  it('counts each refusal by its limit', async () => {
    const text = await scrape(baseOf(url), admin);
    const n = (limit: string) => sample(text, 'moonhub_limit_refusals_total', { limit });
    assert.equal(n('subscriptions_per_session'), 2);
    assert.equal(n('subscription_uri_length'), 300);
    assert.equal(n('subscription_chars'), 2);
    // At least one: A's retries until the hub saw its stream close count too.
    assert.ok(n('listens_per_principal') >= 1);
    assert.equal(n('listens'), 1);
    assert.equal(n('batch_length'), 2);
    assert.equal(n('request_id'), 5);
  });
});

describe('the same bounds on stdio (one session)', () => {
  let child: ChildProcessWithoutNullStreams;
  let out = '';
  before(() => {
    const dir = makeHubDir({ p: PLUGIN });
    const file = dir.write('moonhub.yaml', `plugins: { dirs: [plugins] }\n${LIMITS}`);
    child = spawn(process.execPath, [BIN, 'serve', '--stdio', '--no-watch', '--config', file]);
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  });
  after(() => {
    child.stdin.end();
    child.kill();
  });

  const answerTo = async (id: unknown, timeoutMs = 20_000) => {
    const start = Date.now();
    for (;;) {
      for (const line of out.split('\n')) {
        if (line === '') continue;
        const m = JSON.parse(line) as { id?: unknown; error?: { message: string } };
        if (JSON.stringify(m.id) === JSON.stringify(id)) return m;
      }
      if (Date.now() - start > timeoutMs) throw new Error(`no answer to ${String(id)}:\n${out}`);
      await sleep(20);
    }
  };
  const send = (msg: unknown) => child.stdin.write(JSON.stringify(msg) + '\n');

  it('bounds subscriptions, batches and ids of the one stdio session', async () => {
    send({
      jsonrpc: '2.0',
      id: 'init',
      method: 'initialize',
      params: {
        protocolVersion: '2025-03-26',
        capabilities: {},
        clientInfo: { name: 'x', version: '1' },
      },
    });
    await answerTo('init');
    send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    for (let i = 0; i <= 50; i++)
      send({
        jsonrpc: '2.0',
        id: `s${i}`,
        method: 'resources/subscribe',
        params: { uri: `p://${i}` },
      });
    assert.equal((await answerTo('s49')).error, undefined);
    assert.match((await answerTo('s50')).error!.message, /\(limits\.subscriptions\.per_session\)/);
    send({
      jsonrpc: '2.0',
      id: 'u',
      method: 'resources/subscribe',
      params: { uri: 'p://' + 'z'.repeat(5000) },
    });
    assert.match((await answerTo('u')).error!.message, /\(limits\.subscriptions\.uri_length\)/);
    send(Array.from({ length: 101 }, (_, i) => ({ jsonrpc: '2.0', id: `b${i}`, method: 'ping' })));
    send({ jsonrpc: '2.0', id: 'i'.repeat(300), method: 'ping' });
    send({ jsonrpc: '2.0', id: 'after', method: 'ping' });
    await answerTo('after');
    const errors = out
      .split('\n')
      .filter((l) => l.includes('"id":null'))
      .map((l) => (JSON.parse(l) as { error: { message: string } }).error.message);
    assert.ok(
      errors.some((m) => /\(limits\.batch_length\)/.test(m)),
      errors.join('\n'),
    );
    assert.ok(
      errors.some((m) => /\(limits\.request_id_length\)/.test(m)),
      errors.join('\n'),
    );
  });
});
