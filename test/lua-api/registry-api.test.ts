/**
 * The seed's registry API as Lua code uses it (LUA_API §2): registration and its argument errors,
 * last registration wins, list/remove/call/count for tools, prompts and resources, batches,
 * reset, mcp.proxy misuse, and the result conversion of §2.2.
 */
import assert from 'node:assert/strict';
import { after, beforeEach, describe, it } from 'node:test';
import { LuaState } from '../../src/lua/state.js';
import { installApi } from '../../src/lua-api/index.js';
import { silentLogger } from '../../src/log.js';
import { Registry } from '../../src/registry/registry.js';
import type { EntryKind } from '../../src/registry/types.js';

const states: LuaState[] = [];
after(() => states.forEach((s) => s.close()));

async function plugin(registry: Registry, owner: string, code: string): Promise<LuaState> {
  const state = await LuaState.create({ name: owner });
  states.push(state);
  installApi(state, { registry, owner, logger: silentLogger });
  await state.call(state.load(code, `@${owner}.lua`), []);
  return state;
}

async function run(state: LuaState, code: string): Promise<unknown[]> {
  return state.call(state.load(code, '@test.lua'), []);
}

const ctx = { hub_id: 'test-hub', session_uuid: 'sess-1' };
let registry: Registry;
beforeEach(() => {
  registry = new Registry({ hubId: 'test-hub' });
});

describe('mcp.tool and friends', () => {
  it('registers, lists, counts, calls and removes tools; the last registration wins', async () => {
    const s = await plugin(
      registry,
      'alpha',
      `mcp.tool("greet", { description = "first" }, function() return "one" end)
       mcp.tool("greet", { description = "second", input_schema = { type = "object",
         properties = { name = { type = "string" } }, required = { "name" } } },
         function(p, c) return "hi " .. p.name .. " from " .. c.hub_id .. "/" .. c.session_uuid end)
       mcp.tool("other", {}, function() return 1 end)`,
    );
    assert.equal(registry.countTools(), 2);
    const greet = registry.listTools().find((t) => t.name === 'greet');
    assert.equal(greet?.description, 'second');
    const r = await registry.callTool('greet', { name: 'Ada' }, ctx);
    assert.deepEqual(r.content, [{ type: 'text', text: 'hi Ada from test-hub/sess-1' }]);

    const [count, listed, content, err, removed, after] = await run(
      s,
      `local count = mcp.count()
       local list = mcp.list_tools()
       local content, err = mcp.call_tool("greet", { name = "Lua" }, { session_uuid = "s2" })
       local removed = mcp.remove_tool("other")
       return count, list, content, err, removed, mcp.count()`,
    );
    assert.equal(count, 2);
    assert.deepEqual(
      (listed as { name: string }[]).map((t) => t.name),
      ['greet', 'other'],
    );
    assert.deepEqual((listed as { input_schema: unknown }[])[0]?.input_schema, {
      type: 'object',
      properties: { name: { type: 'string' } },
      required: ['name'],
    });
    assert.deepEqual(content, [{ type: 'text', text: 'hi Lua from test-hub/s2' }]);
    assert.equal(err, undefined);
    assert.equal(removed, true);
    assert.equal(after, 1);
  });

  it('call_tool answers nil plus a message for an unknown tool, bad arguments and a raised error', async () => {
    const s = await plugin(
      registry,
      'beta',
      `mcp.tool("needs_n", { input_schema = { type = "object", properties = { n = { type = "integer" } }, required = { "n" } } },
         function(p) return p.n end)
       mcp.tool("fails", {}, function() error("it broke", 0) end)`,
    );
    const [a, aerr, b, berr, c, cerr] = await run(
      s,
      `local a, aerr = mcp.call_tool("nope", {})
       local b, berr = mcp.call_tool("needs_n", { n = "x" })
       local c, cerr = mcp.call_tool("fails", {})
       return a, aerr, b, berr, c, cerr`,
    );
    assert.equal(a, undefined);
    assert.match(String(aerr), /Unknown tool: nope/);
    assert.equal(b, undefined);
    assert.match(String(berr), /argument 'n' must be integer/);
    assert.equal(c, undefined);
    assert.equal(cerr, 'it broke');
  });

  it('raises on misuse at the caller, in Lua wording', async () => {
    const s = await plugin(registry, 'gamma', '');
    const cases: [string, RegExp][] = [
      [
        'mcp.tool("", {}, function() end)',
        /test\.lua:1: bad argument #1 to 'tool' \(tool name must not be empty\)/,
      ],
      [
        'mcp.tool(nil, {}, function() end)',
        /bad argument #1 to 'tool' \(string expected, got nil\)/,
      ],
      [
        'mcp.tool("x", "schema", function() end)',
        /bad argument #2 to 'tool' \(table expected, got string\)/,
      ],
      ['mcp.tool("x", {}, 42)', /bad argument #3 to 'tool' \(function expected, got number\)/],
      [
        'mcp.tool("x", { input_schema = { type = 12 } }, function() end)',
        /input_schema is not a valid JSON Schema/,
      ],
      ['mcp.proxy(42)', /test\.lua:1: bad argument #1 to 'proxy' \(string expected, got number\)/],
      [
        'mcp.proxy("ftp://x", {})',
        /test\.lua:1: bad argument #1 to 'proxy' \(http\(s\):\/\/\.\.\. or stdio:<command line> expected/,
      ],
      [
        'mcp.proxy("http://x/mcp", { include = 5 })',
        /bad argument #2 to 'proxy' \(opts\.include must be a list of strings, got number\)/,
      ],
      [
        'mcp.proxy("http://x/mcp", { transform_arguments = "upper" })',
        /bad argument #2 to 'proxy' \(opts\.transform_arguments must be a function, got string\)/,
      ],
    ];
    for (const [code, expected] of cases) {
      await assert.rejects(run(s, code), expected, code);
    }
    assert.equal(registry.countTools(), 0, 'nothing half-registered');
  });
});

describe('tool results (LUA_API §2.2)', () => {
  const cases: [string, unknown][] = [
    ['return "text"', { content: [{ type: 'text', text: 'text' }] }],
    ['return 7', { content: [{ type: 'text', text: '7' }] }],
    ['return 2.5', { content: [{ type: 'text', text: '2.5' }] }],
    ['return true', { content: [{ type: 'text', text: 'true' }] }],
    ['return nil', { content: [] }],
    [
      'return { { type = "text", text = "a" }, { type = "image", data = "AA==", mime_type = "image/png" } }',
      {
        content: [
          { type: 'text', text: 'a' },
          { type: 'image', data: 'AA==', mimeType: 'image/png' },
        ],
      },
    ],
    [
      'return { content = { { type = "text", text = "bad" } }, isError = true, structuredContent = { k = 1 } }',
      { content: [{ type: 'text', text: 'bad' }], isError: true, structuredContent: { k: 1 } },
    ],
    [
      'return { ok = true, n = 3 }',
      {
        content: [{ type: 'text', text: '{"ok":true,"n":3}' }],
        structuredContent: { ok: true, n: 3 },
      },
    ],
    ['return { 1, 2, 3 }', { content: [{ type: 'text', text: '[1,2,3]' }] }],
    ['error("nope", 0)', { content: [{ type: 'text', text: 'nope' }], isError: true }],
  ];
  for (const [body, expected] of cases) {
    it(body, async () => {
      await plugin(registry, 'results', `mcp.tool("r", {}, function() ${body} end)`);
      const result = await registry.callTool('r', {}, ctx);
      if (
        (expected as { structuredContent?: unknown }).structuredContent &&
        !body.includes('content =')
      ) {
        // JSON key order of a Lua table is not defined: compare the parsed text.
        assert.deepEqual(JSON.parse(String(result.content[0]?.text)), result.structuredContent);
        assert.deepEqual(
          result.structuredContent,
          (expected as { structuredContent: unknown }).structuredContent,
        );
      } else {
        assert.deepEqual(result, expected);
      }
    });
  }
});

describe('prompts', () => {
  it('registers, renders (table or string), lists, counts and removes prompts', async () => {
    const s = await plugin(
      registry,
      'p',
      `mcp.prompt("hub-context", { description = "state", arguments = { { name = "focus", required = false } } },
         function(args) return { description = "ctx", messages = { { role = "user",
           content = { type = "text", text = "focus: " .. (args.focus or "none") } } } } end)
       mcp.prompt("plain", { arguments = { { name = "who", required = true } } }, function(args) return "hello " .. args.who end)`,
    );
    const table = await registry.getPrompt('hub-context', { focus: 'tests' }, ctx);
    assert.deepEqual(table, {
      description: 'ctx',
      messages: [{ role: 'user', content: { type: 'text', text: 'focus: tests' } }],
    });
    const plain = await registry.getPrompt('plain', { who: 'you' }, ctx);
    assert.deepEqual(plain.messages, [
      { role: 'user', content: { type: 'text', text: 'hello you' } },
    ]);
    await assert.rejects(registry.getPrompt('plain', {}, ctx), /needs the argument 'who'/);

    const [count, names, got, missing, missingErr, removed, after] = await run(
      s,
      `local names = {}
       for i, p in ipairs(mcp.list_prompts()) do names[i] = p.name end
       local got = mcp.get_prompt("plain", { who = "lua" })
       local missing, err = mcp.get_prompt("absent", {})
       return mcp.count_prompts(), names, got, missing, err, mcp.remove_prompt("plain"), mcp.count_prompts()`,
    );
    assert.equal(count, 2);
    assert.deepEqual(names, ['hub-context', 'plain']);
    assert.deepEqual((got as { messages: unknown[] }).messages, [
      { role: 'user', content: { type: 'text', text: 'hello lua' } },
    ]);
    assert.equal(missing, undefined);
    assert.match(String(missingErr), /Unknown prompt: absent/);
    assert.equal(removed, true);
    assert.equal(after, 1);
  });
});

describe('resources', () => {
  it('serves fixed URIs and templates, text and blobs, and lists them apart', async () => {
    const s = await plugin(
      registry,
      'res',
      `mcp.resource("note://index", { name = "index", mime_type = "text/markdown" }, function() return "# index" end)
       mcp.resource("note://{id}", { name = "note", description = "one note" }, function(params, context)
         return { text = "note " .. params.id .. " at " .. context.uri, mime_type = "text/plain" }
       end)
       mcp.resource("bin://{name}", { name = "bytes" }, function() return { blob = "\\0\\1\\255", mime_type = "application/octet-stream" } end)`,
    );
    assert.deepEqual(
      registry.listResources().map((r) => r.uri),
      ['note://index'],
    );
    assert.deepEqual(
      registry.listResourceTemplates().map((r) => r.uriTemplate),
      ['bin://{name}', 'note://{id}'],
    );
    const fixed = await registry.readResource('note://index', ctx);
    assert.deepEqual(fixed.contents, [
      { uri: 'note://index', text: '# index', mimeType: 'text/markdown' },
    ]);
    const templated = await registry.readResource('note://a%20b', ctx);
    assert.deepEqual(templated.contents, [
      { uri: 'note://a%20b', text: 'note a b at note://a%20b', mimeType: 'text/plain' },
    ]);
    const blob = await registry.readResource('bin://x', ctx);
    assert.deepEqual(
      Buffer.from(String(blob.contents[0]?.blob), 'base64'),
      Buffer.from([0, 1, 255]),
    );
    await assert.rejects(
      registry.readResource('note://', ctx).then(() => registry.readResource('nothing://1', ctx)),
      /Resource not found/,
    );

    const [count, templates, read, missing, err, removed, after] = await run(
      s,
      `local templates = mcp.list_resource_templates()
       local read = mcp.read_resource("note://7")
       local missing, err = mcp.read_resource("nothing://1")
       return mcp.count_resources(), templates, read, missing, err, mcp.remove_resource("bin://{name}"), mcp.count_resources()`,
    );
    assert.equal(count, 3);
    assert.deepEqual(
      (templates as { uri_template: string }[]).map((t) => t.uri_template),
      ['bin://{name}', 'note://{id}'],
    );
    assert.equal((read as { text: string }[])[0]?.text, 'note 7 at note://7');
    assert.equal(missing, undefined);
    assert.match(String(err), /Resource not found: nothing:\/\/1/);
    assert.equal(removed, true);
    assert.equal(after, 2);
  });
});

describe('batches and reset', () => {
  it('makes changes between begin_batch and end_batch visible together, one event per kind', async () => {
    const events: EntryKind[][] = [];
    registry.onChange((kinds) => events.push([...kinds].sort()));
    await plugin(
      registry,
      'batch',
      `mcp.begin_batch()
       for i = 1, 5 do mcp.tool("t" .. i, {}, function() return i end) end
       mcp.prompt("p", {}, function() return "x" end)
       mcp.end_batch()`,
    );
    assert.deepEqual(events, [['prompts', 'tools']]);
    assert.equal(registry.countTools(), 5);
  });

  it("reset(source) removes one plugin's surface; reset(nil) clears all", async () => {
    await plugin(
      registry,
      'one',
      'mcp.tool("a", {}, function() end) mcp.prompt("pa", {}, function() return "" end)',
    );
    const two = await plugin(
      registry,
      'two',
      'mcp.tool("b", {}, function() end) mcp.resource("r://x", {}, function() return "" end)',
    );
    await run(two, 'mcp.reset("one")');
    assert.deepEqual(
      registry.listTools().map((t) => t.name),
      ['b'],
    );
    assert.equal(registry.countPrompts(), 0);
    assert.equal(registry.countResources(), 1);
    await run(two, 'mcp.reset(nil)');
    assert.equal(registry.countTools() + registry.countPrompts() + registry.countResources(), 0);
  });
});
