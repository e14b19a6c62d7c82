/**
 * The calling API of LUA_API §3 on a state wired to a real Registry: mcp.call/poll/listTools,
 * task.await/spawn, tools.use, notice, the caller's view (a registry-level filter), and every
 * mcp.call ceiling at its edge (exactly at passes, one over refuses before the tool runs).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { LuaState } from '../../src/lua/state.js';
import { installApi, installScriptApi, registryCaller } from '../../src/lua-api/index.js';
import { installTask } from '../../src/lua-api/task.js';
import { silentLogger } from '../../src/log.js';
import { Registry } from '../../src/registry/registry.js';
import type { ToolCaller } from '../../src/lua-api/tool-caller.js';

const MiB = 1024 * 1024;
let registry: Registry;
const seen: Record<string, unknown>[] = [];
let active = 0;
let peak = 0;
const notices: { text: string; params: unknown }[] = [];

before(() => {
  registry = new Registry({ hubId: 'calls-hub' });
  registry.addTool('tools', {
    name: 'record',
    description: 'Records its arguments',
    inputSchema: { type: 'object' },
    handler: async (args) => {
      seen.push(args);
      return { content: [{ type: 'text', text: 'ok' }] };
    },
  });
  registry.addTool('tools', {
    name: 'slow_echo',
    description: 'Waits, then echoes n',
    inputSchema: {
      type: 'object',
      properties: { n: { type: 'integer' }, ms: { type: 'integer' } },
    },
    handler: async (args) => {
      active++;
      peak = Math.max(peak, active);
      await new Promise((r) => setTimeout(r, Number(args.ms ?? 100)));
      active--;
      return {
        content: [{ type: 'text', text: `n=${String(args.n)}` }],
        structuredContent: { n: args.n },
      };
    },
  });
  registry.addTool('tools', {
    name: 'fail',
    description: 'Always fails',
    inputSchema: { type: 'object' },
    handler: async () => ({ content: [{ type: 'text', text: 'it broke' }], isError: true }),
  });
  registry.addTool('secret', {
    name: 'hidden',
    description: 'Outside the view',
    inputSchema: { type: 'object' },
    handler: async () => ({ content: [{ type: 'text', text: 'leaked' }] }),
  });
});

const states: LuaState[] = [];
after(() => states.forEach((s) => s.close()));

async function scriptState(caller?: ToolCaller): Promise<LuaState> {
  const state = await LuaState.create({ name: 'script' });
  states.push(state);
  const c =
    caller ??
    registryCaller({
      registry,
      ctx: { hub_id: 'calls-hub', filter: (owner) => owner !== 'secret' },
      notice: (text, params) => notices.push({ text, params }),
    });
  installTask(state);
  installScriptApi(state, { caller: () => c, root: () => undefined });
  return state;
}

async function run(state: LuaState, code: string): Promise<unknown[]> {
  const ref = state.load(code, '=test');
  try {
    return await state.call(ref, [], { timeoutMs: 20_000 });
  } finally {
    state.unref(ref);
  }
}

describe('mcp.call, mcp.poll, task.await', () => {
  it('fans out ten calls that run concurrently and collects them in order', async () => {
    const s = await scriptState();
    peak = 0;
    const [out] = await run(
      s,
      `local ids = {}
       for i = 1, 10 do ids[i] = mcp.call("slow_echo", { n = i, ms = 200 }) end
       local results = task.await(ids)
       local out = {}
       for i, r in ipairs(results) do out[i] = r.content end
       return out`,
    );
    assert.deepEqual(
      out,
      Array.from({ length: 10 }, (_, i) => `n=${i + 1}`),
    );
    assert.equal(peak, 10, 'all ten calls were in flight at once');
  });

  it('polls in a loop with task.sleep until the call is done', async () => {
    const s = await scriptState();
    const [r, polls] = await run(
      s,
      `local id = mcp.call("slow_echo", { n = 7, ms = 150 })
       local polls, r = 0, nil
       repeat polls = polls + 1; r = mcp.poll(id); if not r then task.sleep(20) end until r
       return r, polls`,
    );
    assert.deepEqual(r, { id: 'call-1', is_error: false, content: 'n=7' });
    assert.ok((polls as number) > 1);
  });

  it('answers an unknown id with an error result, and a failing tool with is_error', async () => {
    const s = await scriptState();
    const [unknown, failed] = await run(s, `return mcp.poll("nope"), task.await(mcp.call("fail"))`);
    assert.deepEqual(unknown, { id: 'nope', is_error: true, content: 'unknown request id: nope' });
    assert.equal((failed as { is_error: boolean }).is_error, true);
    assert.equal((failed as { content: string }).content, 'it broke');
  });

  it('refuses a tool outside the view exactly like an unknown one', async () => {
    const s = await scriptState();
    const [hidden, missing, names] = await run(
      s,
      `return task.await(mcp.call("hidden")), task.await(mcp.call("no_such_tool")), mcp.listTools()`,
    );
    assert.equal((hidden as { content: string }).content, 'Unknown tool: hidden');
    assert.equal((missing as { content: string }).content, 'Unknown tool: no_such_tool');
    assert.deepEqual(names, ['fail', 'record', 'slow_echo']);
  });

  it('task.spawn runs functions side by side; await returns their values', async () => {
    const s = await scriptState();
    const [values, log] = await run(
      s,
      `local log = {}
       local function note(what) log[#log + 1] = what end
       local a = task.spawn(function(x) note("a start") task.sleep(100) note("a end") return x * 2 end, 21)
       local b = task.spawn(function() note("b start") task.sleep(100) note("b end") return "b" end)
       local r = task.await({ a, b })
       return { r[1].value, r[2].value }, log`,
    );
    assert.deepEqual(values, [42, 'b']);
    // Both started before either ended: their sleeps overlapped.
    assert.deepEqual((log as string[]).slice(0, 2).sort(), ['a start', 'b start']);
  });
});

describe('tools.use', () => {
  it('returns structuredContent, adds action, raises on a tool error', async () => {
    const s = await scriptState();
    seen.length = 0;
    const [v, err] = await run(
      s,
      `local v = tools.use("slow_echo", { n = 3, ms = 1 })
       tools.use("record", "oneshot", { entity = 5 })
       local ok, err = pcall(tools.use, "fail")
       return v, err`,
    );
    assert.deepEqual(v, { n: 3 });
    assert.deepEqual(seen[0], { entity: 5, action: 'oneshot' });
    assert.match(String(err), /it broke/);
  });
});

describe('notice', () => {
  it('hands text and params to the caller', async () => {
    const s = await scriptState();
    notices.length = 0;
    await run(s, `notice("half way", { pct = 50 })`);
    assert.deepEqual(notices, [{ text: 'half way', params: { pct: 50 } }]);
  });
});

describe('plugin states', () => {
  it('have mcp.call next to the registry API', async () => {
    const state = await LuaState.create({ name: 'p' });
    states.push(state);
    installApi(state, { registry, owner: 'p', logger: silentLogger });
    const [r] = await run(
      state,
      `return task.await(mcp.call("slow_echo", { n = 1, ms = 1 })).content`,
    );
    assert.equal(r, 'n=1');
  });
});

describe('mcp.call ceilings at the edge', () => {
  // Each case builds args exactly at the ceiling (passes) and one over (refused, tool never runs).
  const cases: { name: string; at: string; over: string; reason: RegExp }[] = [
    {
      name: '16 MiB string',
      at: `{ s = string.rep("a", ${16 * MiB}) }`,
      over: `{ s = string.rep("a", ${16 * MiB + 1}) }`,
      reason: /argument 's' is a string of 16777217 bytes; the ceiling is 16777216 bytes/,
    },
    {
      name: 'UTF-8 text',
      at: `{ s = "caf\\u{E9}" }`,
      over: `{ s = "caf\\xE9" }`,
      reason: /argument 's' is a string of 4 bytes that is not UTF-8 text/,
    },
    {
      name: '4096 keyed entries',
      at: `(function() local t = {} for i = 1, 4096 do t["k" .. i] = i end return { m = t } end)()`,
      over: `(function() local t = {} for i = 1, 4097 do t["k" .. i] = i end return { m = t } end)()`,
      reason: /argument 'm' is a table with 4097 keyed entries; the ceiling is 4096/,
    },
    {
      name: '262144 sequence items',
      at: `(function() local t = {} for i = 1, 262144 do t[i] = 0 end return { list = t } end)()`,
      over: `(function() local t = {} for i = 1, 262145 do t[i] = 0 end return { list = t } end)()`,
      reason: /argument 'list' is a table with 262145 sequence items; the ceiling is 262144/,
    },
    {
      name: '64 levels',
      at: `(function() local t = {} for _ = 1, 63 do t = { a = t } end return t end)()`,
      over: `(function() local t = {} for _ = 1, 64 do t = { a = t } end return t end)()`,
      reason: /argument 'a(\.a){63}' is nested 65 tables deep; the ceiling is 64/,
    },
    {
      name: 'JSON text',
      at: `'{"x": [1, 2]}'`,
      over: `'{"x": [1, 2]'`,
      reason: /args is a string of 12 bytes that is not JSON/,
    },
  ];
  for (const c of cases) {
    it(`${c.name}: at the ceiling passes, one over refuses`, async () => {
      const s = await scriptState();
      seen.length = 0;
      const [okResult] = await run(s, `return task.await(mcp.call("record", ${c.at}))`);
      assert.equal(
        (okResult as { is_error: boolean }).is_error,
        false,
        JSON.stringify(okResult).slice(0, 300),
      );
      assert.equal(seen.length, 1, 'the tool ran');
      seen.length = 0;
      const [refused] = await run(s, `return task.await(mcp.call("record", ${c.over}))`);
      const r = refused as { is_error: boolean; content: string };
      assert.equal(r.is_error, true);
      assert.match(r.content, c.reason);
      assert.equal(seen.length, 0, 'the tool never ran');
    });
  }

  it('refuses args holding a function or a cycle, and JSON that is not an object', async () => {
    const s = await scriptState();
    seen.length = 0;
    const [fnArg, cyc, arr] = await run(
      s,
      `local t = {} t.self = t
       return task.await(mcp.call("record", { f = print })), task.await(mcp.call("record", t)),
              task.await(mcp.call("record", "[1,2]"))`,
    );
    assert.match((fnArg as { content: string }).content, /cannot convert a function at 'f'/);
    assert.match((cyc as { content: string }).content, /cycle/);
    assert.match((arr as { content: string }).content, /JSON text in args holds an array/);
    assert.equal(seen.length, 0);
  });
});

describe('pictures in plugin results and back through tools.use', () => {
  const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAcAAAAFCAYAAAB4ka1VAAAAAA==';

  it('a handler returns pictures anywhere; tools.use puts them back where they stood', async () => {
    const state = await LuaState.create({ name: 'pics' });
    states.push(state);
    installApi(state, { registry, owner: 'pics', logger: silentLogger });
    await run(
      state,
      `local p = mcp.image({ data = "${PNG}" })
       mcp.tool("pics.nested", {}, function() return { a = { p, { b = p } }, n = 2 } end)
       mcp.tool("pics.items", {}, function() return { p, { type = "text", text = "caption" } } end)
       mcp.tool("pics.many", {}, function() local t = {} for i = 1, 17 do t[i] = p end return { t = t } end)`,
    );
    const nested = await registry.callTool('pics.nested', {}, { hub_id: 'h' });
    assert.deepEqual(nested.structuredContent, {
      a: [{ type: 'image', image: 1 }, { b: { type: 'image', image: 2 } }],
      n: 2,
    });
    assert.deepEqual(nested.content.slice(1), [
      { type: 'image', data: PNG, mimeType: 'image/png' },
      { type: 'image', data: PNG, mimeType: 'image/png' },
    ]);
    const items = await registry.callTool('pics.items', {}, { hub_id: 'h' });
    assert.deepEqual(items.content, [
      { type: 'image', data: PNG, mimeType: 'image/png' },
      { type: 'text', text: 'caption' },
    ]);
    const many = await registry.callTool('pics.many', {}, { hub_id: 'h' });
    assert.equal(many.isError, true);
    assert.match(String(many.content[0]!.text), /too many pictures: a result carries at most 16/);

    const [back, extra] = await run(
      state,
      `local v = tools.use("pics.nested")
       local text, pics = tools.use("pics.items")
       return { w = v.a[1].width, h = v.a[2].b.height, mime = v.a[1].mime_type, n = v.n },
              { text = text, count = #pics, first = pics[1].type }`,
    );
    assert.deepEqual(back, { w: 7, h: 5, mime: 'image/png', n: 2 });
    assert.deepEqual(extra, { text: 'caption', count: 1, first: 'image' });
  });
});
