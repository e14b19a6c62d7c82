/**
 * Botster plugins run unchanged (LUA_API §2, "Botster compatibility"): plugins written from the
 * Botster seed and Botster's public registry API (`require("lib.mcp")`, the callback forms,
 * proxied `isError` answers, `_meta.botster` sent to a real upstream, context fields passed on,
 * string prompts, resources returning tables and numbers, the batch/list/reset details), loaded
 * into a real hub and called through the SDK client over HTTP (both eras) and stdio. Botster's
 * host modules (`lib.hub`) are a stand-in inside the plugin's folder, as a user porting would do.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { connectHttpClient, type Era } from '../helpers/mcp-client.js';
import { BIN, startMoonhub, type MoonhubProcess } from '../helpers/moonhub-process.js';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream.js';

function text(result: unknown): string {
  return ((result as { content: { text?: string }[] }).content ?? [])
    .map((c) => c.text ?? '')
    .join('\n');
}

const HUB_STANDIN = `
-- Stand-in for Botster's host module lib.hub (agents and PTYs are Botster's, not moonhub's).
local inboxes = {}
local Hub = {}
function Hub.post(session_uuid, msg)
  inboxes[session_uuid] = inboxes[session_uuid] or {}
  table.insert(inboxes[session_uuid], msg)
  return { ok = true }
end
function Hub.receive(session_uuid)
  local out = inboxes[session_uuid] or json.array()
  inboxes[session_uuid] = nil
  return out
end
return Hub
`;

const BOTSTER_PLUGIN = (upstream: string) => `
local mcp = require("lib.mcp")
local Hub = require("lib.hub")
assert(mcp == _G.mcp, "lib.mcp is the plugin's own mcp table")

mcp.proxy(${JSON.stringify(upstream)}, { prefix = "up_" })

mcp.tool("post_message", {
  description = "Post a structured message to a session inbox",
  input_schema = {
    type = "object",
    properties = { session_uuid = { type = "string" }, payload = { type = "string" } },
    required = { "session_uuid", "payload" },
  },
}, function(params, context)
  return json.encode(Hub.post(params.session_uuid, { payload = params.payload, from = context.session_uuid }))
end)

mcp.tool("ctx_echo", { description = "What the handler's context holds" }, function(params, context)
  return {
    session_uuid = context.session_uuid or "none",
    workspace_id = context.workspace_id or "none",
    branch_name = context.branch_name or "none",
  }
end)

-- Botster's callback form: the callback runs before call_tool returns, with (content, err, is_error).
mcp.tool("via_callback", { description = "calls ctx_echo with a callback" }, function(params, context)
  local got
  mcp.call_tool("ctx_echo", {}, {
    session_uuid = "forged-session", workspace_id = "ws-42", branch_name = "feature/x",
  }, function(content, err, is_error)
    got = { text = content and content[1].text, err = err, is_error = is_error == true }
  end)
  assert(got, "the callback ran before call_tool returned")
  return got
end)

mcp.tool("proxied_error", { description = "a proxied isError answer" }, function(params, context)
  local content, err, is_error = mcp.call_tool("up_work", {}, context)
  return {
    err = err or "none",
    is_error = is_error == true,
    blocks = content and #content or 0,
    second = content and content[2] and content[2].text or "none",
  }
end)

mcp.tool("unknown_cb", {}, function()
  local r
  mcp.call_tool("no_such_tool", {}, nil, function(content, err) r = { content = content == nil, err = err } end)
  return r
end)

mcp.prompt("hub-context", { description = "Current Botster hub state" }, function(args)
  return "Hub context goes here"
end)
mcp.prompt("no-args", { description = "none", arguments = {} }, function() return "x" end)

mcp.resource("botster://hubs/{hub_id}/agents", { name = "Hub Agents" }, function(params)
  return { hub = params.hub_id, agents = { "a", "b" } }
end)
mcp.resource("botster://count", { name = "Count" }, function() return 42 end)
mcp.resource("botster://broken/{id}", { name = "Broken" }, function(params)
  error("no agent with id " .. params.id, 0)
end)
mcp.prompt("broken-prompt", { description = "raises" }, function() error("prompt store is offline", 0) end)
mcp.prompt("completes", {
  description = "its completion raises",
  arguments = { { name = "x", complete = function() error("completion index offline", 0) end } },
}, function() return "x" end)

mcp.tool("registry_details", {}, function(params, context)
  local out = {}
  mcp.end_batch() -- no batch open: no effect, as in Botster
  for _, p in ipairs(mcp.list_prompts()) do
    if p.name == "no-args" then out.no_args_has_arguments = p.arguments ~= nil end
  end
  for _, t in ipairs(mcp.list_resource_templates()) do
    if t.uriTemplate == "botster://hubs/{hub_id}/agents" then out.template_camel = true end
  end
  local items, err = mcp.read_resource("botster://hubs/h1/agents", context)
  out.read_mime = items and items[1].mimeType or err
  out.read_text = items and items[1].text or err
  local cb
  mcp.read_resource("botster://count", context, function(c, e) cb = c and c[1].text or e end)
  out.read_cb = cb
  local p = mcp.get_prompt("hub-context", {})
  out.prompt_description = p and p.description
  local before = #mcp.list_tools()
  mcp.reset("@/somewhere/plugins/doomed/init.lua")
  out.removed = before - #mcp.list_tools()
  return out
end)
`;

describe('Botster plugins run unchanged', () => {
  let hub: MoonhubProcess;
  let fake: FakeUpstream;
  const dir = mkdtempSync(join(tmpdir(), 'moonhub-botster-'));

  before(async () => {
    fake = await startFakeUpstream();
    mkdirSync(join(dir, 'botster', 'lib'), { recursive: true });
    writeFileSync(join(dir, 'botster', 'init.lua'), BOTSTER_PLUGIN(fake.url));
    writeFileSync(join(dir, 'botster', 'lib', 'hub.lua'), HUB_STANDIN);
    mkdirSync(join(dir, 'doomed'));
    writeFileSync(
      join(dir, 'doomed', 'init.lua'),
      'local mcp = require("lib.mcp")\nmcp.tool("doomed_a", {}, function() return 1 end)\nmcp.tool("doomed_b", {}, function() return 2 end)\n',
    );
    hub = await startMoonhub(['--plugins', dir, '--no-watch']);
  });

  after(async () => {
    await hub?.stop();
    await fake?.close();
  });

  for (const era of ['legacy', 'modern'] as Era[]) {
    describe(`over HTTP, ${era}`, () => {
      let client: Client;
      before(async () => {
        client = (await connectHttpClient(hub.url, era)).client;
      });
      after(async () => client?.close());

      it('loads plugins that start with require("lib.mcp") and answers their tools', async () => {
        const names = (await client.listTools()).tools.map((t) => t.name);
        assert.ok(names.includes('post_message') && names.includes('up_work'), names.join());
        const r = await client.callTool({
          name: 'post_message',
          arguments: { session_uuid: 's1', payload: 'hi' },
        });
        assert.equal(text(r), '{"ok":true}');
      });

      it('runs the callback form with content, err, is_error; identity stays unforgeable', async () => {
        const r = await client.callTool({ name: 'via_callback', arguments: {} });
        const got = JSON.parse(text(r)) as { text: string; err?: string; is_error: boolean };
        assert.equal(got.is_error, false);
        const ctx = JSON.parse(got.text) as Record<string, string>;
        assert.equal(ctx.workspace_id, 'ws-42', 'other context fields reach the handler');
        assert.equal(ctx.branch_name, 'feature/x');
        assert.notEqual(
          ctx.session_uuid,
          'forged-session',
          'a context table cannot name the caller',
        );
        const u = JSON.parse(text(await client.callTool({ name: 'unknown_cb', arguments: {} })));
        assert.deepEqual(u, { content: true, err: 'Unknown tool: no_such_tool' });
      });

      it('gives a proxied isError answer as its content blocks with is_error = true', async () => {
        fake.mode = 'iserror';
        try {
          const r = JSON.parse(
            text(await client.callTool({ name: 'proxied_error', arguments: {} })),
          );
          assert.deepEqual(r, {
            err: 'none',
            is_error: true,
            blocks: 2,
            second: 'GitHub did not confirm it.',
          });
          // A client calling the proxied tool directly sees the upstream's own isError result.
          const direct = await client.callTool({ name: 'up_work', arguments: {} });
          assert.equal(direct.isError, true);
          assert.match(text(direct), /ready for review\.\.\.\nGitHub did not confirm it\./);
        } finally {
          fake.mode = 'ok';
        }
      });

      it('keeps a string prompt’s description and sends table and number resources as text', async () => {
        const p = await client.getPrompt({ name: 'hub-context', arguments: {} });
        assert.equal(p.description, 'Current Botster hub state');
        const agents = await client.readResource({ uri: 'botster://hubs/h7/agents' });
        const item = agents.contents[0] as { text: string; mimeType?: string };
        assert.deepEqual(JSON.parse(item.text), { hub: 'h7', agents: ['a', 'b'] });
        assert.equal(item.mimeType, 'application/json');
        const count = await client.readResource({ uri: 'botster://count' });
        assert.equal((count.contents[0] as { text: string }).text, '42');
      });

      it('sends a raising resource or prompt handler’s message to the client', async () => {
        await assert.rejects(client.readResource({ uri: 'botster://broken/9' }), (err: Error) => {
          assert.match(err.message, /no agent with id 9/);
          assert.doesNotMatch(err.message, /Internal error/);
          return true;
        });
        await assert.rejects(
          client.getPrompt({ name: 'broken-prompt' }),
          /prompt store is offline/,
        );
        await assert.rejects(
          client.complete({
            ref: { type: 'ref/prompt', name: 'completes' },
            argument: { name: 'x', value: 'a' },
          }),
          /completion index offline/,
        );
        // Still serving.
        assert.equal(
          text(
            await client.callTool({
              name: 'post_message',
              arguments: { session_uuid: 's', payload: 'p' },
            }),
          ),
          '{"ok":true}',
        );
      });
    });
  }

  it('logs a raising handler as the plugin’s error, not the hub’s', async () => {
    const from = hub.log().length;
    const { client } = await connectHttpClient(hub.url, 'legacy');
    await assert.rejects(client.readResource({ uri: 'botster://broken/1' }));
    await client.close();
    const line = await hub.waitForLog(/plugin resource handler failed[^\n]*/, from);
    assert.ok(!hub.log().slice(from).includes('internal error while serving a request'), line);
    assert.match(hub.log().slice(from), /"plugin":"botster"/);
  });

  it('sends the caller’s Botster context upstream as params._meta.botster', async () => {
    const { client } = await connectHttpClient(hub.url, 'legacy');
    fake.calls.length = 0;
    await client.callTool({ name: 'up_work', arguments: {} });
    await client.close();
    const meta = (fake.calls[0]?._meta ?? {}) as { botster?: Record<string, string> };
    assert.ok(meta.botster?.session_uuid, JSON.stringify(fake.calls[0]));
    assert.ok(!('workspace_id' in (meta.botster ?? {})), 'only non-empty strings are sent');
  });

  it('the registry details: end_batch, list_prompts, both spellings, read callbacks, reset("@path")', async () => {
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [BIN, 'serve', '--stdio', '--no-watch', '--plugins', dir],
      stderr: 'ignore',
    });
    const client = new Client({ name: 'botster-test', version: '1.0.0' });
    await client.connect(transport);
    try {
      const r = JSON.parse(
        text(await client.callTool({ name: 'registry_details', arguments: {} })),
      );
      assert.deepEqual(r, {
        no_args_has_arguments: false,
        template_camel: true,
        read_mime: 'application/json',
        read_text: r.read_text, // key order is Lua's: compared below as JSON
        read_cb: '42',
        prompt_description: 'Current Botster hub state',
        removed: 2,
      });
      assert.deepEqual(JSON.parse(r.read_text as string), { hub: 'h1', agents: ['a', 'b'] });
      const names = (await client.listTools()).tools.map((t) => t.name);
      assert.ok(!names.includes('doomed_a'), 'reset("@.../doomed/init.lua") removed plugin doomed');
    } finally {
      await client.close();
    }
  });
});
