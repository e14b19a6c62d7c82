/**
 * The fast paths of a proxied tools/call (issue 17, proxy hop), each checked where it could
 * change what a client gets: a real moonhub proxying a real HTTP upstream, called over raw HTTP
 * in both eras. The upstream's result text is passed on unserialised only when the hub would
 * send exactly those members (anything it drops or rewrites still is); an answer over
 * `plugin_limits.upstream_answer_bytes` is refused with the limit named while the hub serves on;
 * a client that goes away mid-call still cancels the upstream request (the call listens to its
 * caller without an AbortSignal now).
 */
import assert from 'node:assert/strict';
import { request, type ClientRequest } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { RAW_JSON } from '../../src/registry/raw-json.js';
import type { ToolResult } from '../../src/registry/types.js';
import { passThrough, UPSTREAM_RAW } from '../../src/upstream/raw-result.js';
import { ENVELOPE } from '../helpers/contract-wire.js';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream.js';
import {
  call as legacyCall,
  initializeSession,
  LEGACY_VERSION,
  rawRequest,
  sessionPost,
  type RawResponse,
} from '../helpers/legacy-raw.js';
import { startMoonhub, type MoonhubProcess } from '../helpers/moonhub-process.js';
import { scratch, type Scratch } from '../reliability/helpers.js';

const INFO = 'io.modelcontextprotocol/serverInfo';
const LIMIT = 65_536;

let fake: FakeUpstream;
let hub: MoonhubProcess;
let dir: Scratch;
let session: string;
let nextId = 1;

function modernPost(name: string): Promise<RawResponse> {
  return rawRequest(hub.url, {
    method: 'POST',
    headers: {
      'MCP-Protocol-Version': '2026-07-28',
      'Mcp-Method': 'tools/call',
      'Mcp-Name': name,
    },
    body: {
      jsonrpc: '2.0',
      id: nextId++,
      method: 'tools/call',
      params: { name, arguments: {}, _meta: ENVELOPE },
    },
  });
}

type Answer = { text: string; result: Record<string, unknown> };

function answerOf(status: number, text: string): Answer {
  assert.equal(status, 200, text);
  const msg = JSON.parse(text) as { result?: Record<string, unknown> };
  assert.ok(msg.result, text);
  return { text, result: msg.result };
}

/** The same call in both eras: [2026-07-28, 2025 session]. */
async function both(name = 'fake.work'): Promise<[Answer, Answer]> {
  const m = await modernPost(name);
  const modern = answerOf(m.status, await m.done);
  const l = await sessionPost(hub.url, undefined, session, legacyCall('tools/call', { name }));
  return [modern, answerOf(l.status, l.text)];
}

const textOf = (r: Record<string, unknown>) =>
  (r.content as { text?: string }[]).map((c) => c.text ?? '').join('\n');

before(async () => {
  fake = await startFakeUpstream();
  dir = scratch('moonhub-fast-path-');
  dir.write('plugins/up.lua', `mcp.proxy("${fake.url}", { prefix = "fake." })\n`);
  const config = dir.write(
    'moonhub.yaml',
    `plugins: { dirs: [plugins] }\nplugin_limits:\n  upstream_answer_bytes: ${LIMIT}\n`,
  );
  hub = await startMoonhub(['--config', config, '--no-watch']);
  await hub.waitForLog(/upstream imported/, 0, 15_000);
  session = (await initializeSession(hub.url, undefined)).sessionId;
});

after(async () => {
  await hub?.stop();
  await fake?.close();
  dir?.remove();
});

describe('passing an upstream result on', () => {
  it('passes a result on as the upstream sent it, in both eras', async () => {
    const tricky = 'he said "hi, {there}" \\ back\\"slash\u2028 ✓ ,]}';
    const result = {
      content: [{ type: 'text', text: tricky }],
      isError: true,
      structuredContent: { a: [1, { b: ',' }], 'c"': '}' },
    };
    fake.mode = 'result';
    fake.result = result;
    const [modern, legacy] = await both();
    assert.deepEqual(legacy.result, result);
    const { _meta, resultType, ...rest } = modern.result;
    assert.deepEqual(rest, result);
    assert.equal(resultType, 'complete');
    assert.equal(((_meta as Record<string, { name: string }>)[INFO] ?? {}).name, 'moonhub');
  });

  it('still drops the members the hub does not pass on', async () => {
    fake.mode = 'result';
    fake.result = {
      content: [{ type: 'text', text: 'kept' }],
      isError: false,
      'x-vendor': { secret: 1 },
      resultType: 'complete',
    };
    for (const { result, text } of await both()) {
      assert.equal(textOf(result), 'kept');
      assert.equal(result.isError, undefined, text);
      assert.equal(result['x-vendor'], undefined, text);
      assert.doesNotMatch(text, /secret/);
    }
    const [modern, legacy] = await both();
    assert.equal(modern.result.resultType, 'complete');
    assert.equal(legacy.result.resultType, undefined, 'no 2026-07-28 member in a 2025 answer');
  });

  it("puts the hub's serverInfo in a 2026-07-28 answer's _meta, keeping the upstream's other members", async () => {
    fake.mode = 'result';
    fake.result = {
      content: [{ type: 'text', text: 'meta' }],
      _meta: { [INFO]: { name: 'fake-upstream', version: '9' } },
    };
    let [modern, legacy] = await both();
    const metaOf = (a: Answer) => a.result._meta as Record<string, { name?: string } | number>;
    assert.equal((metaOf(modern)[INFO] as { name: string }).name, 'moonhub');
    assert.deepEqual(Object.keys(metaOf(modern)), [INFO]);
    // 2025 answers carried the upstream's _meta as it was before this path; they still do.
    assert.deepEqual(legacy.result._meta, { [INFO]: { name: 'fake-upstream', version: '9' } });
    fake.result = {
      content: [{ type: 'text', text: 'meta' }],
      _meta: { [INFO]: { name: 'fake-upstream' }, 'vendor/x': 1 },
    };
    [modern, legacy] = await both();
    assert.equal((metaOf(modern)[INFO] as { name: string }).name, 'moonhub');
    assert.equal(metaOf(modern)['vendor/x'], 1);
    assert.equal(metaOf(legacy)['vendor/x'], 1);
  });

  it('does not pass on a member the upstream sent twice', async () => {
    fake.mode = 'raw';
    fake.raw =
      '{"jsonrpc":"2.0","id":ID,"result":{"content":[{"type":"text","text":"first"}],' +
      '"content":[{"type":"text","text":"second"}]}}';
    for (const { result, text } of await both()) {
      assert.equal(textOf(result), 'second');
      assert.doesNotMatch(text, /first/, 'the answer holds one content member');
    }
  });

  it('marks only results whose text holds exactly their members (unit)', () => {
    const mark = (raw: string, out?: ToolResult): string | undefined => {
      const r = JSON.parse(raw) as Record<string, unknown>;
      Object.defineProperty(r, UPSTREAM_RAW, { value: raw });
      const o = out ?? ({ content: r.content } as ToolResult);
      if (r._meta !== undefined && out === undefined) o._meta = r._meta as Record<string, unknown>;
      passThrough(r, o);
      return (o as { [RAW_JSON]?: string })[RAW_JSON];
    };
    const escaped = String.raw`{"content":[{"type":"text","text":"a\\\"b,\"}"}]}`;
    assert.equal(mark(escaped), escaped);
    assert.deepEqual(
      JSON.parse(
        mark(
          '{"content":[{"type":"text","text":","}],"resultType":"complete","_meta":{"a":[1,2]}} ',
        )!,
      ),
      { content: [{ type: 'text', text: ',' }] },
    );
    assert.equal(mark('{"content":[],"isError":false}'), undefined);
    assert.equal(mark('{"content":[],"other":1}'), undefined);
    assert.equal(mark('{"isError":true,"content":[]}'), undefined);
    assert.equal(mark('{"content":[1],"content":[]}'), undefined);
  });
});

describe('the answer bound', () => {
  it('refuses an answer over upstream_answer_bytes with the limit named, and serves on', async () => {
    const big = (n: number) =>
      `{"jsonrpc":"2.0","id":ID,"result":{"content":[{"type":"text","text":"${'x'.repeat(n)}"}]}}`;
    for (const mode of ['raw', 'raw-sse'] as const) {
      fake.mode = mode;
      fake.raw = big(LIMIT + 1000);
      for (const { result } of await both()) {
        assert.equal(result.isError, true);
        assert.match(
          textOf(result),
          /the upstream answer is larger than 65536 bytes \(plugin_limits\.upstream_answer_bytes\)/,
        );
      }
      fake.raw = big(LIMIT - 1000);
      for (const { result } of await both()) assert.equal(textOf(result).length, LIMIT - 1000);
    }
    fake.mode = 'ok';
    for (const { result } of await both()) assert.equal(textOf(result), 'worked');
    assert.ok(hub.alive());
  });
});

describe('an upstream error that is not an object', () => {
  it('fails the call clearly (null, a string, a number, a list), JSON or SSE; the hub serves on', async () => {
    for (const mode of ['raw', 'raw-sse'] as const) {
      fake.mode = mode;
      for (const error of ['null', '"boom"', '7', '[1,2]']) {
        fake.raw = `{"jsonrpc":"2.0","id":ID,"error":${error}}`;
        for (const { result } of await both()) {
          assert.equal(result.isError, true, `${mode} ${error}: ${JSON.stringify(result)}`);
          assert.match(textOf(result), /upstream/, `${mode} ${error}`);
        }
      }
    }
    // An event whose data is JSON but no message (null, a number, a list) is skipped like one
    // that is not JSON; the stream then ends without an answer.
    fake.mode = 'raw-sse';
    for (const data of ['null', '7', '[1]']) {
      fake.raw = data;
      for (const { result } of await both()) {
        assert.equal(result.isError, true, `${data}: ${JSON.stringify(result)}`);
        assert.match(textOf(result), /upstream/, data);
      }
    }
    fake.mode = 'ok';
    for (const { result } of await both()) assert.equal(textOf(result), 'worked');
    assert.ok(hub.alive());
  });
});

describe('hostile answers, one after another', () => {
  it('each ends its call (a result or a tool error) and the hub serves on', async () => {
    const answers = [
      '{"jsonrpc":"2.0","id":ID,"result":null}',
      '{"jsonrpc":"2.0","id":ID,"result":[]}',
      '{"jsonrpc":"2.0","id":ID,"result":{"content":null}}',
      '{"jsonrpc":"2.0","id":ID,"result":{"content":[null]}}',
      '{"jsonrpc":"2.0","id":ID,"result":{"content":[{"type":null}]}}',
      '{"jsonrpc":"2.0","id":ID,"result":{"content":[],"structuredContent":null}}',
      '{"jsonrpc":"2.0","id":ID,"result":{"content":[],"_meta":null}}',
      '{"jsonrpc":"2.0","id":ID,"result":{"content":[],"isError":"yes"}}',
      '{"jsonrpc":"2.0","id":ID,"error":{"code":null,"message":null,"data":null}}',
      '{"jsonrpc":"2.0","id":ID,"error":{"code":"x","message":{"a":1}}}',
      '{"jsonrpc":"2.0","id":ID,"result":{"content":[]},"error":null}',
      '{"jsonrpc":"2.0","id":null,"result":{"content":[]}}',
      '{"jsonrpc":"2.0","id":ID}',
      '{"jsonrpc":"2.0","id":ID,"result":{"content":[{"type":"text","text":"\ud800"}]}}',
      '[{"jsonrpc":"2.0","id":ID,"result":{"content":[]}}]',
      '{"jsonrpc":"2.0","method":"notifications/progress","params":null}',
    ];
    for (const mode of ['raw', 'raw-sse'] as const) {
      fake.mode = mode;
      for (const raw of answers) {
        fake.raw = raw;
        for (const { result } of await both())
          assert.ok(Array.isArray(result.content), `${mode} ${raw}: ${JSON.stringify(result)}`);
      }
    }
    fake.mode = 'ok';
    for (const { result } of await both()) assert.equal(textOf(result), 'worked');
    assert.ok(hub.alive());
  });
});

describe('a caller that goes away', () => {
  /** A POST whose connection the test closes before any answer (a hanging call answers none). */
  function post(headers: Record<string, string>, body: unknown): ClientRequest {
    const req = request(hub.url, {
      method: 'POST',
      agent: false,
      headers: {
        'Content-Type': 'application/json',
        Accept: 'application/json, text/event-stream',
        ...headers,
      },
    });
    req.on('error', () => undefined);
    req.end(JSON.stringify(body));
    return req;
  }

  const cancels = () => fake.requests.filter((r) => r === 'notifications/cancelled').length;

  async function until(check: () => boolean): Promise<void> {
    for (let i = 0; i < 250 && !check(); i++) await new Promise((r) => setTimeout(r, 20));
  }

  for (const era of ['2026-07-28', '2025 session'] as const) {
    it(`cancels the upstream request when a ${era} client goes away mid-call`, async () => {
      fake.mode = 'hang';
      const calls = fake.calls.length;
      const before = cancels();
      const params = { name: 'fake.work', arguments: {} };
      const req =
        era === '2026-07-28'
          ? post(
              {
                'MCP-Protocol-Version': '2026-07-28',
                'Mcp-Method': 'tools/call',
                'Mcp-Name': 'fake.work',
              },
              {
                jsonrpc: '2.0',
                id: nextId++,
                method: 'tools/call',
                params: { ...params, _meta: ENVELOPE },
              },
            )
          : post(
              { 'Mcp-Session-Id': session, 'MCP-Protocol-Version': LEGACY_VERSION },
              legacyCall('tools/call', params),
            );
      await until(() => fake.calls.length > calls);
      assert.equal(fake.calls.length, calls + 1, 'the call reached the upstream');
      req.destroy();
      await until(() => cancels() > before);
      assert.equal(cancels(), before + 1, 'the upstream was told the call was cancelled');
      fake.mode = 'ok';
      for (const { result } of await both()) assert.equal(textOf(result), 'worked');
    });
  }
});
