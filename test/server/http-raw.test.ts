/**
 * The HTTP endpoint against raw requests: Host/Origin checks, malformed and oversized bodies,
 * wrong JSON-RPC shapes, the 2026-07-28 header rules, batches per revision, and that the process
 * keeps serving after all of it.
 */
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { startHubProcess, type HubProcess } from '../helpers/hub-process.js';
import { openListen } from '../helpers/listen-raw.js';

let hub: HubProcess;
before(async () => {
  hub = await startHubProcess(['5']);
});
after(async () => {
  await hub.stop();
});

const MODERN_META = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientCapabilities': {},
};

interface RpcBody {
  id?: unknown;
  result?: Record<string, unknown>;
  error?: { code: number; message: string; data?: unknown };
}

async function post(
  body: string | object,
  headers: Record<string, string> = {},
): Promise<{ status: number; json: RpcBody | RpcBody[] | undefined; headers: Headers }> {
  const res = await fetch(hub.url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      ...headers,
    },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  return {
    status: res.status,
    json: text ? (JSON.parse(text) as RpcBody) : undefined,
    headers: res.headers,
  };
}

async function modern(
  method: string,
  params: Record<string, unknown> = {},
  extra: Record<string, string> = {},
) {
  const headers: Record<string, string> = {
    'mcp-protocol-version': '2026-07-28',
    'mcp-method': method,
    ...extra,
  };
  return post(
    { jsonrpc: '2.0', id: 7, method, params: { ...params, _meta: MODERN_META } },
    headers,
  );
}

async function newSession(protocolVersion = '2025-11-25'): Promise<string> {
  const r = await post({
    jsonrpc: '2.0',
    id: 1,
    method: 'initialize',
    params: { protocolVersion, capabilities: {}, clientInfo: { name: 'raw', version: '0' } },
  });
  assert.equal(r.status, 200);
  const sid = r.headers.get('mcp-session-id');
  assert.ok(sid);
  await post({ jsonrpc: '2.0', method: 'notifications/initialized' }, { 'mcp-session-id': sid });
  return sid;
}

function rawHttp(
  headers: Record<string, string>,
  body: string,
): Promise<{ status: number; body: string }> {
  const url = new URL(hub.url);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname,
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
      },
      (res) => {
        let data = '';
        res.on('data', (d: Buffer) => (data += d.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: data }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

const discover = {
  jsonrpc: '2.0',
  id: 1,
  method: 'server/discover',
  params: { _meta: MODERN_META },
};
const discoverHeaders = { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'server/discover' };

describe('DNS-rebinding protection', () => {
  it('rejects a foreign Origin with 403 and accepts localhost origins', async () => {
    const bad = await post(discover, { ...discoverHeaders, origin: 'https://evil.example' });
    assert.equal(bad.status, 403);
    const badNull = await post(discover, { ...discoverHeaders, origin: 'null' });
    assert.equal(badNull.status, 403);
    for (const origin of ['http://localhost:5173', 'https://127.0.0.1', 'http://[::1]:8080']) {
      const ok = await post(discover, { ...discoverHeaders, origin });
      assert.equal(ok.status, 200, origin);
    }
  });

  it('rejects a foreign Host with 403', async () => {
    const body = JSON.stringify(discover);
    const bad = await rawHttp({ host: 'evil.example:80', ...discoverHeaders }, body);
    assert.equal(bad.status, 403);
    const rebinding = await rawHttp(
      { host: 'attacker.localhost.evil:1234', ...discoverHeaders },
      body,
    );
    assert.equal(rebinding.status, 403);
    const ok = await rawHttp(
      { host: `localhost:${new URL(hub.url).port}`, ...discoverHeaders },
      body,
    );
    assert.equal(ok.status, 200);
  });
});

describe('bad input', () => {
  it('answers malformed JSON with -32700', async () => {
    const r = await post('{"jsonrpc": "2.0", "id": 1, "method": ');
    assert.equal(r.status, 400);
    assert.equal((r.json as RpcBody).error?.code, -32700);
  });

  it('answers wrong JSON-RPC shapes with -32600', async () => {
    for (const body of [
      { id: 1, method: 'tools/list' },
      { jsonrpc: '1.0', id: 1, method: 'tools/list' },
      { jsonrpc: '2.0', id: { x: 1 }, method: 'tools/list' },
      { jsonrpc: '2.0', id: 1, method: 5 },
      { jsonrpc: '2.0', id: 1, method: 'tools/list', params: [1, 2] },
      42,
      'text',
      null,
    ]) {
      const r = await post(JSON.stringify(body));
      assert.equal(r.status, 400, JSON.stringify(body));
      assert.equal((r.json as RpcBody).error?.code, -32600, JSON.stringify(body));
    }
  });

  it('answers an unknown method with -32601 in both eras', async () => {
    const sid = await newSession();
    const legacy = await post(
      { jsonrpc: '2.0', id: 3, method: 'tools/frobnicate' },
      { 'mcp-session-id': sid },
    );
    assert.equal(legacy.status, 200);
    assert.deepEqual((legacy.json as RpcBody).error?.code, -32601);
    assert.equal((legacy.json as RpcBody).id, 3);
    const m = await modern('tools/frobnicate');
    assert.equal((m.json as RpcBody).error?.code, -32601);
    // Methods the 2026 revision removed are unknown there.
    const ping = await modern('ping');
    assert.equal((ping.json as RpcBody).error?.code, -32601);
  });

  it('refuses a 10 MiB body with 413 and keeps serving', async () => {
    const big = JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: 'echo', arguments: { text: 'x'.repeat(10 * 1024 * 1024) } },
    });
    const r = await post(big);
    assert.equal(r.status, 413);
    assert.equal((r.json as RpcBody).error?.code, -32000);
    const after = await post(discover, discoverHeaders);
    assert.equal(after.status, 200);
    assert.ok(hub.alive());
  });

  it('refuses non-JSON content types (415) and other HTTP methods (405)', async () => {
    const r = await fetch(hub.url, {
      method: 'POST',
      headers: { 'content-type': 'text/plain' },
      body: '{}',
    });
    assert.equal(r.status, 415);
    const put = await fetch(hub.url, { method: 'PUT', body: '{}' });
    assert.equal(put.status, 405);
    const other = await fetch(new URL('/elsewhere', hub.url), { method: 'POST', body: '{}' });
    assert.equal(other.status, 404);
  });

  it('survives a barrage of junk and still serves', async () => {
    const junk = [
      '',
      '[]',
      '[1,2,3]',
      '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":{"x":1}}}',
      '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":5}}}',
      '{"jsonrpc":"2.0","id":1,"method":"initialize","params":null}',
      '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":{}}}',
      '{"jsonrpc":"2.0","result":{},"id":1}',
      '\u0000\u0001',
      '{"__proto__":{"polluted":true},"jsonrpc":"2.0","id":1,"method":"__proto__"}',
      '{"jsonrpc":"2.0","id":1,"method":"constructor"}',
      '"' + 'a'.repeat(100000) + '"',
      '['.repeat(5000) + ']'.repeat(5000),
    ];
    for (const body of junk) {
      const r = await fetch(hub.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json' },
        body,
      });
      assert.ok(r.status >= 200 && r.status < 500, `${body.slice(0, 40)} -> ${r.status}`);
      await r.text();
    }
    const sid = await newSession();
    const proto = await post(
      { jsonrpc: '2.0', id: 1, method: 'constructor' },
      { 'mcp-session-id': sid },
    );
    assert.equal((proto.json as RpcBody).error?.code, -32601);
    const badParams = await post(
      { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: { x: 1 } } },
      { 'mcp-session-id': sid },
    );
    assert.equal((badParams.json as RpcBody).error?.code, -32602);
    assert.equal(({} as Record<string, unknown>).polluted, undefined);
    const ok = await post(discover, discoverHeaders);
    assert.equal(ok.status, 200);
    assert.ok(hub.alive());
  });
});

describe('2026-07-28 stateless rules', () => {
  it('answers server/discover with versions, capabilities and serverInfo', async () => {
    const r = await post(discover, discoverHeaders);
    const result = (r.json as RpcBody).result!;
    assert.equal(result.resultType, 'complete');
    assert.deepEqual(result.supportedVersions, ['2026-07-28']);
    assert.deepEqual(
      (result._meta as Record<string, { name: string }>)['io.modelcontextprotocol/serverInfo']!
        .name,
      'moonhub',
    );
    assert.equal(result.ttlMs, 0);
    assert.equal(r.headers.get('mcp-session-id'), null, 'no session in the stateless era');
  });

  it('rejects header/body disagreements with 400 / -32020', async () => {
    const missingName = await modern('tools/call', { name: 'echo', arguments: { text: 'a' } });
    assert.equal(missingName.status, 400);
    assert.equal((missingName.json as RpcBody).error?.code, -32020);
    const wrongName = await modern(
      'tools/call',
      { name: 'echo', arguments: { text: 'a' } },
      { 'mcp-name': 'add' },
    );
    assert.equal((wrongName.json as RpcBody).error?.code, -32020);
    const wrongMethod = await post(
      { jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: MODERN_META } },
      { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'prompts/list' },
    );
    assert.equal((wrongMethod.json as RpcBody).error?.code, -32020);
    const noMethodHeader = await post(
      { jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: MODERN_META } },
      { 'mcp-protocol-version': '2026-07-28' },
    );
    assert.equal((noMethodHeader.json as RpcBody).error?.code, -32020);
    const versionMismatch = await post(
      { jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: MODERN_META } },
      { 'mcp-protocol-version': '2025-11-25', 'mcp-method': 'tools/list' },
    );
    assert.equal((versionMismatch.json as RpcBody).error?.code, -32020);
    const good = await modern(
      'tools/call',
      { name: 'echo', arguments: { text: 'a' } },
      { 'mcp-name': 'echo' },
    );
    assert.equal(good.status, 200);
    assert.deepEqual((good.json as RpcBody).result?.content, [{ type: 'text', text: 'a' }]);
    // Base64 sentinel form of Mcp-Name.
    const b64 = await modern(
      'tools/call',
      { name: 'echo', arguments: { text: 'b' } },
      { 'mcp-name': `=?base64?${Buffer.from('echo').toString('base64')}?=` },
    );
    assert.equal(b64.status, 200);
  });

  it('needs the envelope when the header names 2026-07-28, and a known revision', async () => {
    const noEnvelope = await post(
      { jsonrpc: '2.0', id: 1, method: 'tools/list' },
      { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/list' },
    );
    assert.equal(noEnvelope.status, 400);
    assert.equal((noEnvelope.json as RpcBody).error?.code, -32602);
    const noCaps = await post(
      {
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/list',
        params: { _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28' } },
      },
      { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/list' },
    );
    assert.equal((noCaps.json as RpcBody).error?.code, -32602);
    const future = await post(
      {
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/list',
        params: {
          _meta: { ...MODERN_META, 'io.modelcontextprotocol/protocolVersion': '2099-01-01' },
        },
      },
      { 'mcp-protocol-version': '2099-01-01', 'mcp-method': 'tools/list' },
    );
    assert.equal(future.status, 400);
    assert.equal((future.json as RpcBody).error?.code, -32022);
    const initModern = await post(
      {
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: {
          protocolVersion: '2025-11-25',
          capabilities: {},
          clientInfo: { name: 'x', version: '1' },
        },
      },
      { 'mcp-protocol-version': '2026-07-28' },
    );
    assert.equal((initModern.json as RpcBody).error?.code, -32020);
  });

  it('adds cache hints to list results and answers an SSE-only client with a stream', async () => {
    const list = await modern('tools/list');
    const result = (list.json as RpcBody).result!;
    assert.equal(result.resultType, 'complete');
    assert.equal(result.cacheScope, 'private');
    assert.equal(typeof result.nextCursor, 'string');
    const res = await fetch(hub.url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'text/event-stream',
        'mcp-protocol-version': '2026-07-28',
        'mcp-method': 'tools/list',
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 9,
        method: 'tools/list',
        params: { _meta: MODERN_META },
      }),
    });
    assert.equal(res.headers.get('content-type'), 'text/event-stream');
    const text = await res.text();
    assert.match(text, /^event: message\ndata: \{"jsonrpc":"2.0","id":9,"result":/);
  });

  it('streams list_changed on subscriptions/listen, filtered by what was asked', async () => {
    const listen = await openListen(
      hub.url,
      'sub-1',
      { promptsListChanged: true },
      { meta: MODERN_META },
    );
    assert.equal(listen.res.headers.get('content-type'), 'text/event-stream');
    const readUntil = (re: RegExp) => listen.readUntil(re);
    await readUntil(/notifications\/subscriptions\/acknowledged/);
    assert.match(listen.text(), /"notifications":\{"promptsListChanged":true\}/);
    assert.match(listen.text(), /"io.modelcontextprotocol\/subscriptionId":"sub-1"/);
    const call = await modern(
      'tools/call',
      { name: 'add_tool', arguments: {} },
      { 'mcp-name': 'add_tool' },
    );
    assert.equal(call.status, 200);
    await readUntil(/notifications\/prompts\/list_changed/);
    assert.doesNotMatch(listen.text(), /tools\/list_changed/, 'tools were not asked for');
    await listen.close();
  });
});

describe('2025 sessions: wire details', () => {
  it('uses -32002 for an unknown resource on the wire', async () => {
    const sid = await newSession();
    const r = await post(
      { jsonrpc: '2.0', id: 4, method: 'resources/read', params: { uri: 'mem://none' } },
      { 'mcp-session-id': sid },
    );
    assert.equal((r.json as RpcBody).error?.code, -32002);
    assert.deepEqual((r.json as RpcBody).error?.data, { uri: 'mem://none' });
    assert.equal((r.json as RpcBody).result, undefined);
  });

  it('accepts batches on 2025-03-26 only', async () => {
    const batch = [
      { jsonrpc: '2.0', id: 1, method: 'ping' },
      {
        jsonrpc: '2.0',
        id: 2,
        method: 'tools/call',
        params: { name: 'echo', arguments: { text: 'b' } },
      },
      { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 99 } },
    ];
    const old = await newSession('2025-03-26');
    const ok = await post(batch, { 'mcp-session-id': old });
    assert.equal(ok.status, 200);
    const replies = ok.json as RpcBody[];
    assert.equal(replies.length, 2);
    assert.deepEqual(
      replies.map((r) => r.id),
      [1, 2],
    );
    const current = await newSession('2025-11-25');
    const refused = await post(batch, { 'mcp-session-id': current });
    assert.equal(refused.status, 400);
    assert.equal((refused.json as RpcBody).error?.code, -32600);
    const modernBatch = await post([discover], discoverHeaders);
    assert.equal((modernBatch.json as RpcBody).error?.code, -32600);
  });

  it('accepts notifications with 202 and stores logging/setLevel', async () => {
    const sid = await newSession();
    const n = await fetch(hub.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'mcp-session-id': sid },
      body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/whatever' }),
    });
    assert.equal(n.status, 202);
    const lvl = await post(
      { jsonrpc: '2.0', id: 5, method: 'logging/setLevel', params: { level: 'debug' } },
      { 'mcp-session-id': sid },
    );
    assert.deepEqual((lvl.json as RpcBody).result, {});
    const bad = await post(
      { jsonrpc: '2.0', id: 6, method: 'logging/setLevel', params: { level: 'loud' } },
      { 'mcp-session-id': sid },
    );
    assert.equal((bad.json as RpcBody).error?.code, -32602);
    const comp = await post(
      {
        jsonrpc: '2.0',
        id: 7,
        method: 'completion/complete',
        params: {
          ref: { type: 'ref/prompt', name: 'greet' },
          argument: { name: 'name', value: 'A' },
        },
      },
      { 'mcp-session-id': sid },
    );
    assert.deepEqual((comp.json as RpcBody).result, {
      completion: { values: [], total: 0, hasMore: false },
    });
  });

  it('aborts a running call on notifications/cancelled', async () => {
    const sid = await newSession();
    const pending = post(
      {
        jsonrpc: '2.0',
        id: 'slow-1',
        method: 'tools/call',
        params: { name: 'slow', arguments: { ms: 10000 } },
      },
      { 'mcp-session-id': sid },
    );
    await new Promise((r) => setTimeout(r, 100));
    const c = await post(
      {
        jsonrpc: '2.0',
        method: 'notifications/cancelled',
        params: { requestId: 'slow-1', reason: 'test' },
      },
      { 'mcp-session-id': sid },
    );
    assert.equal(c.status, 202);
    const r = await pending;
    assert.deepEqual((r.json as RpcBody).result?.content, [{ type: 'text', text: 'aborted' }]);
  });

  it('aborts a running call when the client disconnects', async () => {
    const before = (hub.stderr().match(/slow: aborted/g) ?? []).length;
    const ctl = new AbortController();
    const p = fetch(hub.url, {
      method: 'POST',
      signal: ctl.signal,
      headers: {
        'content-type': 'application/json',
        accept: 'application/json',
        'mcp-protocol-version': '2026-07-28',
        'mcp-method': 'tools/call',
        'mcp-name': 'slow',
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name: 'slow', arguments: { ms: 10000 }, _meta: MODERN_META },
      }),
    }).catch(() => undefined);
    await new Promise((r) => setTimeout(r, 100));
    ctl.abort();
    await p;
    const start = Date.now();
    while ((hub.stderr().match(/slow: aborted/g) ?? []).length <= before) {
      if (Date.now() - start > 3000) throw new Error('the handler was not aborted');
      await new Promise((r) => setTimeout(r, 20));
    }
  });
});
