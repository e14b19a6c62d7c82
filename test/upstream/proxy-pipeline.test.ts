/**
 * Pipelined proxied calls (issue 17, proxy hop, session 6): calls to a plain-http upstream that
 * arrive together are written together on one keep-alive socket (`plugin_limits.
 * upstream_pipeline`). A real moonhub proxying a real node:http upstream, called concurrently
 * over raw HTTP in both eras: every call gets its own answer, on fewer upstream connections than
 * calls; an upstream that mixes answers up fails those calls clearly instead of crossing them;
 * `upstream_pipeline: 1` still serves; a bad value is refused at start with the key named.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ENVELOPE } from '../helpers/contract-wire.js';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream.js';
import {
  call as legacyCall,
  initializeSession,
  rawRequest,
  sessionPost,
} from '../helpers/legacy-raw.js';
import { startMoonhub, type MoonhubProcess } from '../helpers/moonhub-process.js';
import { scratch, type Scratch } from '../reliability/helpers.js';

let fake: FakeUpstream;
let dir: Scratch;
let nextId = 1;

type Result = { content: { text?: string }[]; isError?: boolean };

async function modernCall(hub: MoonhubProcess, args: Record<string, unknown>): Promise<Result> {
  const r = await rawRequest(hub.url, {
    method: 'POST',
    headers: {
      'MCP-Protocol-Version': '2026-07-28',
      'Mcp-Method': 'tools/call',
      'Mcp-Name': 'fake.work',
    },
    body: {
      jsonrpc: '2.0',
      id: nextId++,
      method: 'tools/call',
      params: { name: 'fake.work', arguments: args, _meta: ENVELOPE },
    },
  });
  const text = await r.done;
  assert.equal(r.status, 200, text);
  return (JSON.parse(text) as { result: Result }).result;
}

async function legacyCallOf(
  hub: MoonhubProcess,
  session: string,
  args: Record<string, unknown>,
): Promise<Result> {
  const r = await sessionPost(
    hub.url,
    undefined,
    session,
    legacyCall('tools/call', { name: 'fake.work', arguments: args }),
  );
  assert.equal(r.status, 200, r.text);
  return (JSON.parse(r.text) as { result: Result }).result;
}

async function startHub(config: string): Promise<MoonhubProcess> {
  const file = dir.write('moonhub.yaml', `plugins: { dirs: [plugins] }\n${config}`);
  const hub = await startMoonhub(['--config', file, '--no-watch']);
  await hub.waitForLog(/upstream imported/, 0, 15_000);
  return hub;
}

before(async () => {
  fake = await startFakeUpstream();
  dir = scratch('moonhub-pipeline-');
  dir.write('plugins/up.lua', `mcp.proxy("${fake.url}", { prefix = "fake." })\n`);
});

after(async () => {
  await fake?.close();
  dir?.remove();
});

describe('pipelined proxied calls', () => {
  let hub: MoonhubProcess;
  let session: string;

  before(async () => {
    hub = await startHub('');
    session = (await initializeSession(hub.url, undefined)).sessionId;
  });

  after(async () => {
    await hub?.stop();
  });

  it('answers every concurrent call with its own result, on fewer connections, in both eras', async () => {
    fake.mode = 'echo';
    // A first call: the upstream shows it keeps connections alive (pipelining starts after it).
    await modernCall(hub, { n: -1 });
    for (const era of ['2026-07-28', '2025 session'] as const) {
      const pipelined = fake.pipelined;
      const n = 24;
      // Calls are pipelined when they reach the hub in one turn of its event loop; on a loaded
      // machine one wave may arrive spread out, so up to five waves (each checked in full).
      for (let wave = 0; wave < 5 && fake.pipelined === pipelined; wave++) {
        const before = fake.connections;
        // Multi-byte text of varying length: each request's bytes are counted and copied into
        // the one buffer its write shares with the others.
        const s = (i: number) => 'ü✓😀'.repeat(i % 3);
        const all = await Promise.all(
          Array.from({ length: n }, (_, i) =>
            era === '2026-07-28'
              ? modernCall(hub, { n: i, wave, s: s(i) })
              : legacyCallOf(hub, session, { n: i, wave, s: s(i) }),
          ),
        );
        assert.deepEqual(
          all.map((r) => r.content[0]?.text),
          all.map((_, i) => JSON.stringify({ n: i, wave, s: s(i) })),
          `${era}: each call its own answer`,
        );
        const opened = fake.connections - before;
        assert.ok(opened < n, `${era}: ${opened} upstream connections for ${n} calls`);
      }
      assert.ok(fake.pipelined > pipelined, `${era}: calls were pipelined`);
    }
  });

  it('fails calls whose answers the upstream mixed up instead of crossing them, and serves on', async () => {
    fake.mode = 'swap';
    const [a, b] = await Promise.all([modernCall(hub, { n: 1 }), modernCall(hub, { n: 2 })]);
    for (const r of [a!, b!]) {
      assert.equal(r.isError, true);
      assert.match(r.content[0]?.text ?? '', /not the answer to this request/);
    }
    fake.mode = 'echo';
    assert.equal((await modernCall(hub, { n: 3 })).content[0]?.text, '{"n":3}');
    assert.ok(hub.alive());
  });
});

describe('plugin_limits.upstream_pipeline', () => {
  it('1 sends every call on its own and still serves', async () => {
    const hub = await startHub('plugin_limits:\n  upstream_pipeline: 1\n');
    try {
      fake.mode = 'echo';
      const pipelined = fake.pipelined;
      await modernCall(hub, { n: -1 });
      const all = await Promise.all(Array.from({ length: 8 }, (_, i) => modernCall(hub, { n: i })));
      assert.deepEqual(
        all.map((r) => r.content[0]?.text),
        all.map((_, i) => JSON.stringify({ n: i })),
      );
      assert.equal(fake.pipelined, pipelined, 'nothing pipelined');
    } finally {
      await hub.stop();
    }
  });

  it('refuses a value out of range at start, naming the key', async () => {
    const file = dir.write('bad.yaml', 'plugin_limits:\n  upstream_pipeline: 0\n');
    await assert.rejects(startMoonhub(['--config', file, '--no-watch']), /upstream_pipeline/);
  });
});
