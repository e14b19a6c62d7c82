/**
 * End to end: a real `moonhub serve` process on a scratch plugins directory, driven by the official
 * SDK client in both protocol eras. Hot reload, a broken edit that keeps the old surface, removal,
 * the sandbox and the limits as a caller sees them, and calls that wait interleaving.
 */
import assert from 'node:assert/strict';
import { mkdirSync, rmSync, writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { connectHttpClient, waitFor, type Era } from '../helpers/mcp-client.js';
import { startMoonhub, type MoonhubProcess } from '../helpers/moonhub-process.js';

const PROBE = String.raw`
-- Test plugin: each tool exercises one rule of the sandbox or one limit.
mcp.tool("probe.eval", {
  description = "run a chunk (test only)",
  input_schema = { type = "object", properties = { code = { type = "string" } }, required = { "code" } },
}, function(p)
  local f = assert(load(p.code, "=probe"))
  return f()
end)

mcp.tool("probe.spin", { description = "never ends", timeout_ms = 300 }, function()
  while true do end
end)

mcp.tool("probe.grow", { description = "eats memory", timeout_ms = 20000 }, function()
  local t = {}
  local i = 0
  while true do i = i + 1; t[i] = string.rep("x", 1024) .. i end
end)

mcp.tool("probe.sleepy", { description = "sleeps past its timeout", timeout_ms = 200 }, function()
  task.sleep(5000)
  return "woke up"
end)

mcp.tool("probe.wait", {
  input_schema = { type = "object", properties = { ms = { type = "integer", minimum = 0 } }, required = { "ms" } },
}, function(p)
  local started = os.clock()
  task.sleep(p.ms)
  return { waited = p.ms }
end)

mcp.tool("probe.call_slow", {}, function(_, ctx)
  local content, err = mcp.call_tool("slow.work", { ms = 1000 }, ctx)
  if not content then error(err, 0) end
  return content
end)

mcp.tool("probe.ok", {}, function() return "ok" end)

mcp.tool("probe.print", {}, function() print("hello from probe", 42) return "printed" end)
`;

const SLOW = String.raw`
mcp.tool("slow.work", {
  input_schema = { type = "object", properties = { ms = { type = "integer" } } },
}, function(p)
  task.sleep(p.ms or 100)
  return "done after " .. (p.ms or 100)
end)
`;

const HOT_V1 = `mcp.tool("hot.version", { description = "which version is loaded" }, function() return "v1" end)\n`;
const HOT_V2 = `mcp.tool("hot.version", { description = "which version is loaded" }, function() return "v2" end)
mcp.tool("hot.extra", {}, function() return "extra" end)\n`;
const HOT_BROKEN = `mcp.tool("hot.version", {}, function() return "v3" end)\nlocal x = = 1\n`;

let dir: string;
let hub: MoonhubProcess;

function text(result: { content?: unknown }): string {
  return ((result.content ?? []) as { type: string; text?: string }[])
    .map((c) => c.text ?? '')
    .join('');
}

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'moonhub-e2e-'));
  writeFileSync(join(dir, 'probe.lua'), PROBE);
  writeFileSync(join(dir, 'slow.lua'), SLOW);
  mkdirSync(join(dir, 'hot'));
  writeFileSync(join(dir, 'hot', 'init.lua'), HOT_V1);
  hub = await startMoonhub(['--plugins', dir]);
});

after(async () => {
  await hub.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('sandbox and limits, as a caller sees them', () => {
  const escapes: [string, RegExp][] = [
    ['return type(io)', /^nil$/],
    ['return type(os.execute), type(os.exit), type(os.getenv)', /^nil$/],
    [
      'return select(2, load(string.char(27) .. "Lua"))',
      /attempt to load a binary chunk \(mode is 't'\)/,
    ],
    ['return type(string.dump)', /^nil$/],
    ['return debug.getregistry()', /attempt to call a nil value \(field 'getregistry'\)/],
    ['return require("../slow")', /module '\.\.\/slow' not found/],
    ['return require("slow")', /single-file plugin can only require built-in modules/],
    ['return package.loadlib', /^$/],
  ];
  for (const [code, expected] of escapes) {
    it(`contains: ${code}`, async () => {
      const { client } = await connectHttpClient(hub.url, 'legacy');
      try {
        const r = await client.callTool({ name: 'probe.eval', arguments: { code } });
        assert.match(text(r), expected);
        const next = await client.callTool({ name: 'probe.ok', arguments: {} });
        assert.equal(text(next), 'ok');
      } finally {
        await client.close();
      }
    });
  }

  const limits: [string, RegExp][] = [
    ['probe.spin', /timeout: the call ran longer than its 300 ms limit/],
    ['probe.grow', /memory limit exceeded: the Lua state may use at most 64 MiB/],
    ['probe.sleepy', /timeout: the call ran longer than its 200 ms limit/],
  ];
  for (const [tool, expected] of limits) {
    it(`${tool} ends with an error that names its limit, and the plugin keeps working`, async () => {
      const { client } = await connectHttpClient(hub.url, 'modern');
      try {
        const r = await client.callTool({ name: tool, arguments: {} });
        assert.equal(r.isError, true);
        assert.match(text(r), expected);
        const next = await client.callTool({ name: 'probe.ok', arguments: {} });
        assert.equal(text(next), 'ok');
        assert.ok(hub.alive());
      } finally {
        await client.close();
      }
    });
  }

  it('refuses arguments that break the input schema before the handler runs', async () => {
    const { client } = await connectHttpClient(hub.url, 'legacy');
    try {
      const r = await client.callTool({ name: 'probe.wait', arguments: { ms: 'soon' } });
      assert.equal(r.isError, true);
      assert.match(
        text(r),
        /Invalid arguments for tool 'probe.wait': argument 'ms' must be integer/,
      );
      const missing = await client.callTool({ name: 'probe.wait', arguments: {} });
      assert.match(text(missing), /missing required argument 'ms'/);
    } finally {
      await client.close();
    }
  });
});

describe('plugin output', () => {
  it('sends print to the hub log, tagged with the plugin', async () => {
    const from = hub.log().length;
    const { client } = await connectHttpClient(hub.url, 'legacy');
    try {
      assert.equal(text(await client.callTool({ name: 'probe.print', arguments: {} })), 'printed');
    } finally {
      await client.close();
    }
    const line = await hub.waitForLog(/[^\n]*hello from probe\\t42[^\n]*/, from);
    assert.match(line, /"plugin":"probe"/);
  });
});

describe('calls that wait interleave', () => {
  for (const era of ['legacy', 'modern'] as Era[]) {
    it(`two task.sleep calls into one plugin overlap (${era})`, async () => {
      const { client } = await connectHttpClient(hub.url, era);
      try {
        const t0 = Date.now();
        const [a, b] = await Promise.all([
          client.callTool({ name: 'probe.wait', arguments: { ms: 1000 } }),
          client.callTool({ name: 'probe.wait', arguments: { ms: 1000 } }),
        ]);
        const elapsed = Date.now() - t0;
        assert.deepEqual(a.structuredContent, { waited: 1000 });
        assert.deepEqual(b.structuredContent, { waited: 1000 });
        // One after the other would take 2 s; the margin is wide for a loaded machine.
        assert.ok(elapsed < 1800, `queued instead of interleaving: ${elapsed} ms`);
      } finally {
        await client.close();
      }
    });
  }

  it('two handlers waiting on mcp.call_tool of a slow tool in another plugin overlap', async () => {
    const { client } = await connectHttpClient(hub.url, 'legacy');
    try {
      const t0 = Date.now();
      const results = await Promise.all([
        client.callTool({ name: 'probe.call_slow', arguments: {} }),
        client.callTool({ name: 'probe.call_slow', arguments: {} }),
      ]);
      const elapsed = Date.now() - t0;
      for (const r of results) assert.equal(text(r), 'done after 1000');
      assert.ok(elapsed < 1800, `queued instead of interleaving: ${elapsed} ms`);
    } finally {
      await client.close();
    }
  });
});

describe('hot reload', () => {
  it('reloads an edited plugin, keeps the old surface through a broken edit, removes a deleted one', async () => {
    const legacy = await connectHttpClient(hub.url, 'legacy');
    const modern = await connectHttpClient(hub.url, 'modern');
    try {
      for (const { client } of [legacy, modern]) {
        assert.equal(text(await client.callTool({ name: 'hot.version', arguments: {} })), 'v1');
      }
      // The 2026 client learns of changes through subscriptions/listen: give it a moment to open.
      await new Promise((r) => setTimeout(r, 300));

      writeFileSync(join(dir, 'hot', 'init.lua'), HOT_V2);
      await waitFor(
        () => legacy.events.tools > 0 && modern.events.tools > 0,
        10_000,
        'tools/list_changed in both eras',
      );
      for (const { client } of [legacy, modern]) {
        assert.equal(text(await client.callTool({ name: 'hot.version', arguments: {} })), 'v2');
        const names = (await client.listTools()).tools.map((t) => t.name);
        assert.ok(names.includes('hot.extra'));
      }

      const from = hub.log().length;
      writeFileSync(join(dir, 'hot', 'init.lua'), HOT_BROKEN);
      const line = await hub.waitForLog(/plugin failed to reload[^\n]*/, from);
      assert.match(line, /init\.lua:2:/, 'the error names the file and line');
      assert.equal(
        text(await legacy.client.callTool({ name: 'hot.version', arguments: {} })),
        'v2',
      );
      assert.ok((await legacy.client.listTools()).tools.some((t) => t.name === 'hot.extra'));

      const before = legacy.events.tools;
      rmSync(join(dir, 'hot'), { recursive: true });
      await waitFor(() => legacy.events.tools > before, 10_000, 'list_changed after removal');
      const names = (await legacy.client.listTools()).tools.map((t) => t.name);
      assert.ok(!names.includes('hot.version') && !names.includes('hot.extra'));
      await assert.rejects(
        legacy.client.callTool({ name: 'hot.version', arguments: {} }),
        /Unknown tool/,
      );

      writeFileSync(
        join(dir, 'fresh.lua'),
        'mcp.tool("fresh.hello", {}, function() return "hi" end)\n',
      );
      await waitFor(
        () => legacy.events.tools > before + 1,
        10_000,
        'list_changed after a new plugin',
      );
      assert.equal(
        text(await legacy.client.callTool({ name: 'fresh.hello', arguments: {} })),
        'hi',
      );
    } finally {
      await legacy.client.close();
      await modern.client.close();
    }
  });
});
