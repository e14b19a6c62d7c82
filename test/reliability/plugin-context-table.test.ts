/**
 * The plugin hop's fast paths (src/plugins/context-table.ts, wire.ts resultText): a caller's
 * context sent to the worker once and named by id, and a tool result's JSON made in the worker
 * and passed on by the dispatcher. What must not change: each caller sees its own context (the
 * table bounded, its entries dropped and made again), and every answer is byte for byte the one
 * the same hub gives with plugins on its own thread (the same bytes where Lua's table order does
 * not decide), results that need shaping or are refused included.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import { ContextTable } from '../../src/plugins/context-table.js';
import type { ToWorker } from '../../src/plugins/worker-protocol.js';
import type { CallContext } from '../../src/registry/types.js';
import { BIN, startMoonhub, type MoonhubProcess } from '../helpers/moonhub-process.js';
import { callTool } from './isolation-helpers.js';
import {
  createSession,
  makeHubDir,
  rawPost,
  scopedPlugin,
  type Issued,
} from '../helpers/auth-hub.js';

describe('the context table (hub side)', () => {
  const table = (size: number) => {
    const sent: ToWorker[] = [];
    return { sent, t: new ContextTable(size, (m) => sent.push(m)) };
  };
  const ctx = (principal: string, extra: Partial<CallContext> = {}): CallContext => ({
    hub_id: 'h',
    principal,
    session_uuid: `s-${principal}`,
    ...extra,
  });

  it('names one caller by one id, and two callers never by the same', () => {
    const { sent, t } = table(8);
    const a = t.idOf(ctx('a', { request_id: 1 }), undefined);
    assert.equal(t.idOf(ctx('a', { request_id: 2 }), undefined), a);
    const b = t.idOf(ctx('b'), undefined);
    assert.notEqual(a, b);
    // A value that would run into the next field in a plain concatenation is still its own.
    const c = t.idOf({ hub_id: 'h', principal: 'ab', session_uuid: 'c' }, undefined);
    const d = t.idOf({ hub_id: 'h', principal: 'a', session_uuid: 'bc' }, undefined);
    assert.notEqual(c, d);
    // Client capabilities by content: equal ones share, others do not.
    const p1 = t.idOf(ctx('a'), { pollLater: true, caps: { sampling: {} } });
    assert.equal(t.idOf(ctx('a'), { pollLater: true, caps: { sampling: {} } }), p1);
    assert.notEqual(t.idOf(ctx('a'), { pollLater: true, caps: { roots: {} } }), p1);
    assert.notEqual(p1, a);
    // The per-call fields never reach an entry.
    const defined = sent.filter((m) => m.type === 'context');
    assert.equal(defined.length, t.entries);
    for (const m of defined) assert.equal('request_id' in m.entry.ctx, false);
    // Large client capabilities are not kept: the call carries them.
    const huge = { experimental: { x: 'y'.repeat(5000) } };
    assert.equal(t.idOf(ctx('a'), { pollLater: true, caps: huge }), undefined);
    // A Lua caller's own fields are not shared: the call carries its context.
    assert.equal(t.idOf(ctx('a', { fields: { x: 1 } }), undefined), undefined);
    assert.equal(new ContextTable(0, () => undefined).idOf(ctx('a'), undefined), undefined);
  });

  it('stays within its bound, dropping the least recently used, ids never reused', () => {
    const { sent, t } = table(4);
    const first = t.idOf(ctx('keep'), undefined)!;
    const ids = new Set<number>([first]);
    for (let i = 0; i < 1000; i++) {
      const id = t.idOf(ctx(`p${i}`), undefined)!;
      assert.equal(ids.has(id), false);
      ids.add(id);
      // Used in between: never the one dropped.
      assert.equal(t.idOf(ctx('keep'), undefined), first);
      assert.ok(t.entries <= 4);
    }
    const forgotten = sent.filter((m) => m.type === 'forget');
    assert.equal(forgotten.length, 1001 - 4);
    assert.equal(
      forgotten.some((m) => m.cx === first),
      false,
    );
    t.clear();
    assert.equal(t.entries, 0);
    assert.notEqual(t.idOf(ctx('keep'), undefined), first);
  });
});

const AGENTS = ['A', 'B', 'C'] as const;
const CONFIG = `
auth: { mode: token }
plugins: { dirs: [plugins], context_table_size: 2 }
agents:
  A: { plugins: [alpha], builtins: [] }
  B: { plugins: [alpha], builtins: [] }
  C: { plugins: [alpha], builtins: [] }
`;

describe('callers alternating on one plugin worker (table of 2, three callers)', () => {
  let hub: MoonhubProcess;
  const sessions = {} as Record<(typeof AGENTS)[number], Issued>;

  before(async () => {
    const dir = makeHubDir({ alpha: scopedPlugin('alpha') });
    const config = dir.write('moonhub.yaml', CONFIG);
    hub = await startMoonhub(['--config', config, '--data', dir.data, '--no-watch']);
    const common = ['--config', config, '--data', dir.data, '--url', hub.url];
    for (const a of AGENTS) sessions[a] = createSession([...common, '--agent', a]);
  });
  after(async () => hub.stop());

  it('each sees its own context, in every order and with calls in flight', async () => {
    const call = async (agent: (typeof AGENTS)[number], id: number) => {
      const r = await rawPost(
        hub.url,
        { id, method: 'tools/call', params: { name: 'alpha.echo', arguments: {} } },
        { Authorization: `Bearer ${sessions[agent].token}` },
      );
      assert.equal(r.status, 200, r.text);
      const body = JSON.parse(r.text) as { id: number; result: Record<string, unknown> };
      assert.equal(body.id, id);
      // The 2026-07-28 members the dispatcher adds to the worker's text.
      assert.equal(body.result.resultType, 'complete');
      assert.ok(body.result._meta !== undefined);
      const seen = body.result.structuredContent as Record<string, unknown>;
      assert.equal(seen.session_uuid, sessions[agent].session_uuid, `call ${id} (${agent})`);
      assert.equal(seen.agent_name, agent, `call ${id}`);
    };
    // One at a time, round robin: with a table of 2, every third call's entry was dropped.
    let id = 1;
    for (let round = 0; round < 6; round++) for (const a of AGENTS) await call(a, id++);
    // Many in flight, interleaved.
    const batch: Promise<void>[] = [];
    for (let i = 0; i < 60; i++) batch.push(call(AGENTS[(i * 7) % 3]!, id++));
    await Promise.all(batch);
    assert.ok(hub.alive());
  });
});

const RESTARTED = String.raw`
mcp.tool("st.ctx", {}, function(_, context) return "hub " .. context.hub_id end)
mcp.tool("st.stuck", { timeout_ms = 300 }, function()
  return tostring(string.find(string.rep("a", 100000), ".-.-.-.-.-.-x"))
end)
`;

describe('a restarted worker starts with an empty table on both sides', () => {
  let hub: MoonhubProcess;
  before(async () => {
    const dir = makeHubDir({ st: RESTARTED });
    const config = dir.write(
      'moonhub.yaml',
      'hub_id: ctxhub\nplugins: { dirs: [plugins], hard_stop_grace_ms: 200 }\n',
    );
    hub = await startMoonhub(['--config', config, '--no-watch']);
  });
  after(async () => hub.stop());

  it('calls after a hard stop define their caller again and are answered', async () => {
    assert.equal((await callTool(hub.url, 'st.ctx')).text, 'hub ctxhub');
    const stuck = await callTool(hub.url, 'st.stuck');
    assert.equal(stuck.isError, true);
    assert.match(stuck.text, /stopped hard/);
    for (let i = 0; i < 3; i++) {
      const r = await callTool(hub.url, 'st.ctx');
      assert.equal(r.isError, false, r.text);
      assert.equal(r.text, 'hub ctxhub');
    }
  });
});

const SHAPES = String.raw`
mcp.tool("r.text", {}, function(p) return p.text end)
mcp.tool("r.table", {}, function() return { a = 1, b = { 1.5, "x", true }, c = "\u{e9}\"\\" } end)
mcp.tool("r.items", {}, function()
  return { { type = "text", text = "t" }, { type = "image", data = "aGk=", mime_type = "image/png" } }
end)
mcp.tool("r.err", {}, function()
  return { content = { { type = "text", text = "nope" } }, is_error = true }
end)
mcp.tool("r.raise", {}, function() error("raised here") end)
mcp.tool("r.nan", {}, function() return { x = 0/0, y = -0.0 } end)
mcp.tool("r.bytes", {}, function() return "\255ok" end)
mcp.tool("r.big", {}, function() return string.rep("x", 200000) end)
`;

/** An answer line parsed, a text item holding a table's JSON parsed too (any member order). */
function unordered(line: string): unknown {
  const answer = JSON.parse(line) as { result?: { content?: { text?: unknown }[] } };
  for (const item of answer.result?.content ?? []) {
    if (typeof item.text === 'string' && item.text.startsWith('{'))
      item.text = JSON.parse(item.text);
  }
  return answer;
}

/** A `moonhub serve --stdio` child and its answer lines, by request id. */
class StdioHub {
  private readonly child: ChildProcessWithoutNullStreams;
  private buf = '';
  private readonly waiting = new Map<string, (line: string) => void>();

  constructor(config: string) {
    this.child = spawn(process.execPath, [
      BIN,
      'serve',
      '--stdio',
      '--no-watch',
      '--config',
      config,
    ]);
    this.child.stdout.on('data', (d: Buffer) => {
      this.buf += d.toString();
      let nl: number;
      while ((nl = this.buf.indexOf('\n')) !== -1) {
        const line = this.buf.slice(0, nl);
        this.buf = this.buf.slice(nl + 1);
        const id = JSON.stringify((JSON.parse(line) as { id?: unknown }).id);
        this.waiting.get(id)?.(line);
        this.waiting.delete(id);
      }
    });
  }

  request(id: string | number, method: string, params: Record<string, unknown>): Promise<string> {
    const key = JSON.stringify(id);
    const answer = new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no answer to ${key}`)), 30_000);
      this.waiting.set(key, (line) => {
        clearTimeout(timer);
        resolve(line);
      });
    });
    this.child.stdin.write(JSON.stringify({ jsonrpc: '2.0', id, method, params }) + '\n');
    return answer;
  }

  async init(): Promise<void> {
    await this.request('init', 'initialize', {
      protocolVersion: '2025-06-18',
      capabilities: {},
      clientInfo: { name: 't', version: '1' },
    });
    this.child.stdin.write('{"jsonrpc":"2.0","method":"notifications/initialized"}\n');
  }

  stop(): void {
    this.child.stdin.end();
    this.child.kill();
  }
}

describe('stdio answers with plugins on workers are those of plugins on the hub thread', () => {
  const hubs: StdioHub[] = [];
  before(async () => {
    const dir = makeHubDir({ r: SHAPES });
    for (const isolation of ['worker', 'none']) {
      const file = dir.write(
        `${isolation}.yaml`,
        `plugins: { dirs: [plugins], isolation: ${isolation} }\nplugin_limits: { result_bytes: 100000 }\n`,
      );
      const hub = new StdioHub(file);
      hubs.push(hub);
      await hub.init();
    }
  });
  after(() => hubs.forEach((h) => h.stop()));

  it('byte for byte, for every result shape, refusal and id type', async () => {
    const calls: [string, Record<string, unknown>][] = [
      ['r.text', { text: 'hello' }],
      ['r.text', { text: 'é"\\\n\u2028 ' + 'y'.repeat(5000) }],
      ['r.table', {}],
      ['r.items', {}],
      ['r.err', {}],
      ['r.raise', {}],
      ['r.nan', {}],
      ['r.bytes', {}],
      ['r.big', {}],
    ];
    let n = 0;
    for (const [name, args] of calls) {
      for (const id of [++n, `s-${n}`]) {
        const [worker, inThread] = await Promise.all(
          hubs.map((h) => h.request(id, 'tools/call', { name, arguments: args })),
        );
        const what = `${name} (${JSON.stringify(id)})`;
        // Lua's table order differs between two states (its hash seed): same members, any order.
        assert.deepEqual(unordered(worker!), unordered(inThread!), what);
        // Results the hub shapes from a string: the very same bytes.
        if (name !== 'r.table' && name !== 'r.items' && name !== 'r.err' && name !== 'r.nan')
          assert.equal(worker, inThread, what);
      }
    }
    const big = JSON.parse(
      await hubs[0]!.request('big', 'tools/call', { name: 'r.big', arguments: {} }),
    ) as { result: { isError: boolean; content: { text: string }[] } };
    assert.equal(big.result.isError, true);
    assert.match(big.result.content[0]!.text, /result_bytes|limit/);
    const table = JSON.parse(
      await hubs[0]!.request('t', 'tools/call', { name: 'r.table', arguments: {} }),
    ) as { result: { structuredContent: unknown } };
    assert.deepEqual(table.result.structuredContent, { a: 1, b: [1.5, 'x', true], c: 'é"\\' });
  });
});
