/**
 * The examples of the Botster registry seed and of the `mcp` namespace seed, each run verbatim
 * (their text pasted as the seeds show it) in a real hub and called by the SDK client over HTTP;
 * and Botster's registry semantics that a plugin ported from Botster relies on, as its
 * `lib/mcp.lua` does them, checked on plugins running in their worker threads (the default);
 * and the chilkat seed's stated property defaults, which no example script shows.
 */
import { after, before, describe, it } from 'node:test';
import { spawnSync } from 'node:child_process';
import assert from 'node:assert/strict';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/client';
import { connectHttpClient } from '../helpers/mcp-client.js';
import { BIN, ROOT, startMoonhub, type MoonhubProcess } from '../helpers/moonhub-process.js';

const IMAGES = join(ROOT, 'test', 'fixtures', 'images');

/** The registry seed's `Tool` example, as the seed prints it. */
const SEED_TOOL = `mcp.tool("tool_name", {
  description = "One-line description shown to the agent",
  input_schema = {
    type = "object",
    properties = {
      file = { type = "string", description = "Path to read" },
      limit = { type = "number", description = "Max results" },
    },
    required = { "file" },
  },
}, function(params, context)
  return {
    file = params.file,
    session_uuid = context.session_uuid,
  }
end)`;

/** The registry seed's `Prompt` example, as the seed prints it. */
const SEED_PROMPT = `mcp.prompt("hub-context", {
  description = "Inject current hub state",
  arguments = {
    { name = "focus", description = "Optional focus area", required = false },
  },
}, function(args)
  return {
    description = "Current Botster hub state",
    messages = {
      {
        role = "user",
        content = {
          type = "text",
          text = "Hub context goes here",
        },
      },
    },
  }
end)`;

/** Botster's lib/mcp.lua: a raised handler error is `nil, err` from call_tool, never content. */
const PORTED = `local mcp = require("lib.mcp")
mcp.tool("raises", {}, function() error("inbox store is offline", 0) end)
mcp.tool("returns_error", {}, function()
  return { content = { { type = "text", text = "not found" } }, isError = true }
end)
mcp.tool("check_raised", {}, function(params, context)
  local content, err, is_error = mcp.call_tool("raises", {}, context)
  local cb
  mcp.call_tool("raises", {}, context, function(c, e, i) cb = { content = c == nil, err = e, is_error = i == true } end)
  local rc, rerr, ris = mcp.call_tool("returns_error", {}, context)
  return {
    content_nil = content == nil, err = err, is_error = is_error == true,
    callback = cb,
    returned = { text = rc and rc[1].text, err = rerr or "none", is_error = ris == true },
  }
end)
-- Records with a \`type\` field of their own are data, not MCP content items.
mcp.tool("open_issues", {}, function()
  return { { type = "bug", title = "crash on save" }, { type = "feature", title = "dark mode" } }
end)
mcp.resource("botster://hubs/{hub_id}/agents", { name = "Hub Agents" }, function(p) return {} end)
mcp.resource("botster://status", { name = "Status" }, function() return "up" end)
-- A Botster plugin's index of its resources: descriptions are strings there ("" when none).
mcp.tool("resource_index", {}, function()
  local lines = {}
  for _, t in ipairs(mcp.list_resource_templates()) do
    lines[#lines + 1] = t.uriTemplate .. " - " .. t.name .. ": " .. t.description
  end
  for _, r in ipairs(mcp.list_resources()) do
    lines[#lines + 1] = r.uri .. " - " .. r.name .. ": " .. r.description
  end
  table.sort(lines)
  return table.concat(lines, "\\n")
end)
`;

/** A tool shaped as the namespace seed's `capture` (action `oneshot`) answering a capture result. */
const CAPTURE = (png: string) => `mcp.tool("capture", {
  input_schema = { type = "object", properties = { action = { type = "string" }, entity = {} } },
}, function(params)
  assert(params.action == "oneshot", "the action is passed as a field")
  return { imageBase64 = ${JSON.stringify(png)}, path = "/captures/oneshot.png" }
end)`;

/** The chilkat seed's stated defaults and conventions that no example script shows (moonhub run). */
const CHILKAT_DEFAULTS = `local chilkat = require("chilkat")
chilkat.unlock_bundle("...")
local mcp = chilkat.Mcp.new()
local out = {
  auth_token = mcp.auth_token, connected = mcp.connected,
  connect_timeout_ms = mcp.connect_timeout_ms, idle_timeout_ms = mcp.idle_timeout_ms,
  heartbeat_ms = mcp.heartbeat_ms, protocol_version = mcp.protocol_version,
  session_id = mcp.session_id, verbose_logging = mcp.verbose_logging,
  server_instructions = mcp.server_instructions, version = mcp.version,
  by_call = chilkat.Mcp().protocol_version,
}
mcp.last_method_success = false
out.success_written = mcp.last_method_success
out.close_unconnected = mcp:close()
mcp:dispose()
local ok, err = pcall(function() return mcp:list_tools(chilkat.JsonObject.new()) end)
out.disposed_method = ok and "no error" or err
return out`;

function text(result: unknown): string {
  return ((result as { content: { text?: string }[] }).content ?? [])
    .map((c) => c.text ?? '')
    .join('\n');
}

describe('the seeds’ examples, verbatim, in a real hub', () => {
  let hub: MoonhubProcess;
  let client: Client;
  const dir = mkdtempSync(join(tmpdir(), 'moonhub-seeds-'));

  before(async () => {
    const plugins = join(dir, 'plugins');
    const root = join(dir, 'root');
    mkdirSync(join(plugins, 'ported'), { recursive: true });
    mkdirSync(join(root, 'tmp'), { recursive: true });
    writeFileSync(join(plugins, 'seed.lua'), `${SEED_TOOL}\n\n${SEED_PROMPT}\n`);
    writeFileSync(join(plugins, 'ported', 'init.lua'), PORTED);
    const png = readFileSync(join(IMAGES, 'rgba-7x5.png')).toString('base64');
    writeFileSync(join(plugins, 'camera.lua'), CAPTURE(png));
    // Plugins load in name order: b_rules registers after a_rules.
    for (const who of ['a', 'b']) {
      writeFileSync(
        join(plugins, `${who}_rules.lua`),
        `mcp.tool("same", { description = "${who}" }, function() return "${who}" end)
mcp.prompt("same-prompt", { description = "${who}" }, function() return "${who}" end)\n`,
      );
    }
    writeFileSync(
      join(plugins, 'echo.lua'),
      'mcp.tool("echo", {}, function(p) return p.text or "no args" end)\n',
    );
    copyFileSync(join(IMAGES, 'rgba-7x5.png'), join(root, 'tmp', 'probe.png'));
    // execute's /source/ is this shared (read-only) root, where the seed's picture already is.
    const config = join(dir, 'moonhub.json');
    writeFileSync(config, JSON.stringify({ execute: { root } }));
    hub = await startMoonhub(['--plugins', plugins, '--config', config, '--no-watch']);
    client = (await connectHttpClient(hub.url, 'legacy')).client;
  });

  after(async () => {
    await client?.close();
    await hub?.stop();
  });

  it('registry seed, Tool: the schema listed, params and context.session_uuid returned', async () => {
    const tool = (await client.listTools()).tools.find((t) => t.name === 'tool_name');
    assert.equal(tool?.description, 'One-line description shown to the agent');
    assert.deepEqual(tool?.inputSchema.required, ['file']);
    const r = await client.callTool({ name: 'tool_name', arguments: { file: 'a.txt', limit: 3 } });
    const got = r.structuredContent as { file: string; session_uuid: string };
    assert.equal(got.file, 'a.txt');
    assert.ok(got.session_uuid, 'the context carries the calling session');
    const bad = await client.callTool({ name: 'tool_name', arguments: { limit: 3 } });
    assert.equal(bad.isError, true);
    assert.match(text(bad), /file/);
  });

  it('registry seed, Prompt: its argument listed, its description and message returned', async () => {
    const listed = (await client.listPrompts()).prompts.find((p) => p.name === 'hub-context');
    assert.deepEqual(listed?.arguments, [
      { name: 'focus', description: 'Optional focus area', required: false },
    ]);
    const p = await client.getPrompt({ name: 'hub-context', arguments: {} });
    assert.equal(p.description, 'Current Botster hub state');
    assert.deepEqual(p.messages, [
      { role: 'user', content: { type: 'text', text: 'Hub context goes here' } },
    ]);
  });

  it('registry seed, Rules: the last registration wins for a tool or prompt name', async () => {
    const tools = (await client.listTools()).tools.filter((t) => t.name === 'same');
    assert.deepEqual(
      tools.map((t) => t.description),
      ['b'],
    );
    assert.equal(text(await client.callTool({ name: 'same', arguments: {} })), 'b');
    const prompt = await client.getPrompt({ name: 'same-prompt', arguments: {} });
    assert.equal(prompt.description, 'b');
    // The operator is told which plugin took a name from which.
    assert.match(
      hub.log(),
      /"plugin":"b_rules"[^\n]*tool 'same' replaces the one registered by 'a_rules'/,
    );
    assert.match(hub.log(), /prompt 'same-prompt' replaces the one registered by 'a_rules'/);
  });

  it('as Botster, call_tool of a raising tool is nil, err (plugin in its worker)', async () => {
    const r = JSON.parse(text(await client.callTool({ name: 'check_raised', arguments: {} })));
    assert.deepEqual(r, {
      content_nil: true,
      err: 'inbox store is offline',
      is_error: false,
      callback: { content: true, err: 'inbox store is offline', is_error: false },
      returned: { text: 'not found', err: 'none', is_error: true },
    });
  });

  it('as Botster, listed resources without a description have "" as theirs', async () => {
    const r = await client.callTool({ name: 'resource_index', arguments: {} });
    assert.ok(!r.isError, text(r));
    assert.equal(
      text(r),
      'botster://hubs/{hub_id}/agents - Hub Agents: \nbotster://status - Status: ',
    );
  });

  it('a list of records that have a type field of their own is sent as JSON text', async () => {
    const r = await client.callTool({ name: 'open_issues', arguments: {} });
    assert.ok(!r.isError, text(r));
    assert.deepEqual(JSON.parse(text(r)), [
      { type: 'bug', title: 'crash on save' },
      { type: 'feature', title: 'dark mode' },
    ]);
  });

  it('chilkat seed: property defaults, a writable last_method_success, close unconnected, dispose', async () => {
    // `moonhub run`: execute scripts have no require (docs/lua-api.md, The execute tool).
    const file = join(dir, 'chilkat-defaults.lua');
    writeFileSync(file, CHILKAT_DEFAULTS);
    const r = spawnSync(process.execPath, [BIN, 'run', file], {
      encoding: 'utf8',
      timeout: 30_000,
    });
    assert.equal(r.status, 0, r.stderr);
    const got = JSON.parse(r.stdout) as Record<string, unknown>;
    const disposed = got.disposed_method;
    assert.match(String(disposed), /chilkat\.Mcp: the object was disposed/);
    assert.deepEqual(
      { ...got, disposed_method: undefined },
      {
        auth_token: '',
        connected: false,
        connect_timeout_ms: 30000,
        idle_timeout_ms: 180000,
        heartbeat_ms: 0,
        protocol_version: '2025-06-18',
        session_id: '',
        verbose_logging: false,
        server_instructions: '',
        version: '11.7.0',
        by_call: '2025-06-18',
        success_written: false,
        close_unconnected: true,
        disposed_method: undefined,
      },
    );
  });

  it('namespace seed, mcp.call: args a table, a JSON string or none; a refusal polls at once', async () => {
    const code = `local refused = mcp.call("echo", "not json")
local at_once = mcp.poll(refused)
local ids = { mcp.call("echo", { text = "table" }), mcp.call("echo", '{"text":"string"}'), mcp.call("echo") }
local got = {}
for i, r in ipairs(task.await(ids)) do got[i] = r.content end
return { at_once = at_once, got = got, unknown = mcp.poll("no-such-id").is_error }`;
    const r = await client.callTool({ name: 'execute', arguments: { code } });
    assert.ok(!r.isError, text(r));
    const got = (r.structuredContent as { result: Record<string, unknown> }).result;
    const atOnce = got.at_once as { is_error: boolean; content: string } | undefined;
    assert.equal(atOnce?.is_error, true, 'mcp.poll answers a refused call without waiting');
    assert.match(atOnce.content, /not JSON/);
    assert.deepEqual(got.got, ['table', 'string', 'no args']);
    assert.equal(got.unknown, true);
  });

  it('namespace seed, mcp.image: both examples return a picture', async () => {
    const first = await client.callTool({
      name: 'execute',
      arguments: {
        code: 'return { verdict = "too dark", shot = mcp.image("/source/tmp/probe.png") }',
      },
    });
    assert.ok(!first.isError, text(first));
    const second = await client.callTool({
      name: 'execute',
      arguments: {
        code: `local shot = tools.use("capture", "oneshot", { entity = e })
return { shot = mcp.image(shot) }`,
      },
    });
    assert.ok(!second.isError, text(second));
    for (const r of [first, second]) {
      const images = (r.content as { type: string; mimeType?: string }[]).filter(
        (c) => c.type === 'image',
      );
      assert.equal(images.length, 1);
      assert.equal(images[0]!.mimeType, 'image/png');
      const result = (r.structuredContent as { result: Record<string, unknown> }).result;
      assert.deepEqual(result.shot, { type: 'image', image: 1 });
    }
    const verdict = (first.structuredContent as { result: { verdict: string } }).result.verdict;
    assert.equal(verdict, 'too dark');
    // A capture result's path carries over into the image value.
    const value = await client.callTool({
      name: 'execute',
      arguments: {
        code: `local v = mcp.image(tools.use("capture", "oneshot", {}))
return { path = v.path, width = v.width, height = v.height, bytes = v.bytes }`,
      },
    });
    assert.deepEqual((value.structuredContent as { result: unknown }).result, {
      path: '/captures/oneshot.png',
      width: 7,
      height: 5,
      bytes: readFileSync(join(IMAGES, 'rgba-7x5.png')).length,
    });
  });
});
