/**
 * The HTTP answer of a Lua tools/call as it is written on the fast path (one `writeHead` with a
 * flat header array, then `end`), in both eras, against a real hub over raw HTTP: the head
 * carries the right Content-Length (bytes, not characters), the 2025 session id and nothing of
 * another request's; a 2026-07-28 error keeps its status; the Host check still refuses after
 * an accepted Host was remembered; an unknown session still gets 404; the hub keeps serving.
 */
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ROOT, startMoonhub, type MoonhubProcess } from '../helpers/moonhub-process.js';

const LEGACY = '2025-11-25';
const MODERN_META = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientCapabilities': {},
};

interface Raw {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  raw: Buffer;
  text: string;
}

/** One POST on a connection of its own; `body` is sent exactly as given. */
function post(url: string, body: string, headers: Record<string, string>): Promise<Raw> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method: 'POST',
        agent: false,
        headers: { 'Content-Type': 'application/json', ...headers },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const raw = Buffer.concat(chunks);
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            raw,
            text: raw.toString('utf8'),
          });
        });
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

function modernCall(url: string, id: number, text: string, extra: Record<string, string> = {}) {
  return post(
    url,
    JSON.stringify({
      jsonrpc: '2.0',
      id,
      method: 'tools/call',
      params: { name: 'echo', arguments: { text }, _meta: MODERN_META },
    }),
    {
      Accept: 'application/json, text/event-stream',
      'MCP-Protocol-Version': '2026-07-28',
      'Mcp-Method': 'tools/call',
      'Mcp-Name': 'echo',
      ...extra,
    },
  );
}

async function openSession(url: string): Promise<string> {
  const init = await post(
    url,
    JSON.stringify({
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: {
        protocolVersion: LEGACY,
        capabilities: {},
        clientInfo: { name: 'answer-write', version: '1.0.0' },
      },
    }),
    { Accept: 'application/json, text/event-stream' },
  );
  const sid = init.headers['mcp-session-id'];
  assert.equal(init.status, 200, init.text);
  assert.equal(typeof sid, 'string');
  const ack = await post(
    url,
    JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
    {
      Accept: 'application/json, text/event-stream',
      'Mcp-Session-Id': sid as string,
      'MCP-Protocol-Version': LEGACY,
    },
  );
  assert.equal(ack.status, 202);
  return sid as string;
}

function legacyCall(
  url: string,
  sid: string,
  id: number,
  text: string,
  accept = 'application/json, text/event-stream',
) {
  return post(
    url,
    JSON.stringify({
      jsonrpc: '2.0',
      id,
      method: 'tools/call',
      params: { name: 'echo', arguments: { text } },
    }),
    { Accept: accept, 'Mcp-Session-Id': sid, 'MCP-Protocol-Version': LEGACY },
  );
}

let hub: MoonhubProcess;
before(async () => {
  hub = await startMoonhub(['--plugins', join(ROOT, 'bench', 'plugins'), '--no-watch']);
});
after(async () => {
  await hub.stop();
});

describe('the answer of a tools/call over HTTP', () => {
  it('2026-07-28: JSON with a byte-exact Content-Length and no session id', async () => {
    // Multi-byte characters: a Content-Length counted in characters would cut the body.
    const text = 'héllo wörld ✓ 🌙';
    const r = await modernCall(hub.url, 7, text);
    assert.equal(r.status, 200, r.text);
    assert.equal(r.headers['content-type'], 'application/json');
    assert.equal(Number(r.headers['content-length']), r.raw.length);
    assert.equal(r.headers['mcp-session-id'], undefined);
    assert.equal(r.headers['transfer-encoding'], undefined);
    const body = JSON.parse(r.text) as {
      id: number;
      result: { content: { text: string }[] };
    };
    assert.equal(body.id, 7);
    assert.equal(body.result.content[0]!.text, text);
  });

  it('2026-07-28: an unknown method keeps its own HTTP status (404) and JSON-RPC error', async () => {
    const r = await post(
      hub.url,
      JSON.stringify({
        jsonrpc: '2.0',
        id: 8,
        method: 'no/such_method',
        params: { _meta: MODERN_META },
      }),
      {
        Accept: 'application/json, text/event-stream',
        'MCP-Protocol-Version': '2026-07-28',
        'Mcp-Method': 'no/such_method',
      },
    );
    assert.equal(r.status, 404, r.text);
    assert.equal(Number(r.headers['content-length']), r.raw.length);
    const body = JSON.parse(r.text) as { id: number; error: { code: number } };
    assert.equal(body.id, 8);
    assert.equal(body.error.code, -32601);
  });

  it('2025 session: each answer carries its own session id, JSON or a one-event stream', async () => {
    const [a, b] = await Promise.all([openSession(hub.url), openSession(hub.url)]);
    assert.notEqual(a, b);
    // Interleaved on separate connections: no answer may carry the other session's id.
    const answers = await Promise.all(
      Array.from({ length: 10 }, (_, i) => legacyCall(hub.url, i % 2 ? b : a, 100 + i, `n${i}`)),
    );
    answers.forEach((r, i) => {
      assert.equal(r.status, 200, r.text);
      assert.equal(r.headers['mcp-session-id'], i % 2 ? b : a);
      assert.equal(r.headers['content-type'], 'application/json');
      assert.equal(Number(r.headers['content-length']), r.raw.length);
      const body = JSON.parse(r.text) as { id: number; result: { content: { text: string }[] } };
      assert.equal(body.id, 100 + i);
      assert.equal(body.result.content[0]!.text, `n${i}`);
    });
    // A client that accepts only an event stream gets one, with its session id.
    const sse = await legacyCall(hub.url, a, 200, 'streamed', 'text/event-stream');
    assert.equal(sse.status, 200);
    assert.equal(sse.headers['content-type'], 'text/event-stream');
    assert.equal(sse.headers['mcp-session-id'], a);
    assert.match(sse.text, /^event: message\ndata: \{.*"id":200.*"streamed".*\}\n\n$/s);
  });

  it('2025: an unknown session is 404 and a wrong protocol version header 400', async () => {
    const unknown = await legacyCall(hub.url, 'no-such-session', 300, 'x');
    assert.equal(unknown.status, 404);
    assert.equal(unknown.headers['mcp-session-id'], undefined);
    const sid = await openSession(hub.url);
    const badVersion = await post(
      hub.url,
      JSON.stringify({
        jsonrpc: '2.0',
        id: 301,
        method: 'tools/call',
        params: { name: 'echo', arguments: { text: 'x' } },
      }),
      {
        Accept: 'application/json, text/event-stream',
        'Mcp-Session-Id': sid,
        'MCP-Protocol-Version': '1999-01-01',
      },
    );
    assert.equal(badVersion.status, 400);
    // The session itself is still served.
    const ok = await legacyCall(hub.url, sid, 302, 'still here');
    assert.equal(ok.status, 200);
  });

  it('the Host check refuses a foreign Host right after an accepted one, and accepts again', async () => {
    const good = await modernCall(hub.url, 400, 'a');
    assert.equal(good.status, 200);
    const evil = await modernCall(hub.url, 401, 'b', { Host: 'evil.example:80' });
    assert.equal(evil.status, 403);
    const evilAgain = await modernCall(hub.url, 402, 'c', { Host: 'evil.example:80' });
    assert.equal(evilAgain.status, 403);
    const back = await modernCall(hub.url, 403, 'd');
    assert.equal(back.status, 200);
    assert.ok(hub.alive());
  });
});
