/**
 * A plugin registering new input schemas without end (fresh definitions in a loop, or a large
 * catalogue at each reload): its worker compiles each one to refuse a bad schema at `mcp.tool`,
 * and the hub's thread used to compile each one again as the registration arrived, up to 1024
 * in one turn (~0.4 ms each on an idle machine): /healthz waited 1.5-1.8 s on a loaded one. The
 * hub no longer compiles a worker's tool schema (the worker checks the arguments; schema.ts,
 * toolValidator), so the flood costs the hub's thread only the bookkeeping, and the schemas hold.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Client } from '@modelcontextprotocol/client';
import { makeHubDir, type HubDir } from '../helpers/auth-hub.js';
import { connectHttpClient } from '../helpers/mcp-client.js';
import { startMoonhub, type MoonhubProcess } from '../helpers/moonhub-process.js';
import { adminToken, hubLoopDelay } from '../helpers/operations.js';
import { call, honestClient } from './helpers.js';

const REGISTRATIONS = 2000;

// Twelve properties with bounds, each definition new (a counter in a description): what a
// catalogue of real tools looks like to the compiler, without the 10,000-entry limit mattering
// (the names cycle through ten tools).
const FLOOD = `
local n = 0
local function schema(k)
  local props = {}
  for p = 1, 12 do
    props["f" .. p] = { type = "string", minLength = 1, maxLength = 64 + p,
                        description = "field " .. p .. " of definition " .. k }
  end
  props.count = { type = "integer", minimum = 0, maximum = 1000 }
  props.tags = { type = "array", items = { type = "string", maxLength = 8 }, maxItems = 4 }
  return { type = "object", properties = props, required = { "f1" }, additionalProperties = false }
end
mcp.tool("flood", { timeout_ms = 60000 }, function(args)
  for i = 1, args.count do
    n = n + 1
    mcp.tool("dyn" .. (i % 10), { input_schema = schema(n) }, function() return "dyn" end)
  end
  return "registered " .. n
end)
`;
const OTHER = `mcp.tool("other.echo", {}, function() return "echo" end)`;
const BAD = `
local ok, err = pcall(mcp.tool, "bad", { input_schema = { type = "object", properties = { a = { type = "nope" } } } }, function() end)
mcp.tool("bad.said", {}, function() return tostring(ok) .. ": " .. tostring(err) end)
`;

describe('a plugin registering new schemas in a loop', () => {
  let dir: HubDir;
  let hub: MoonhubProcess;
  let client: Client;

  before(async () => {
    dir = makeHubDir({ f: FLOOD, other: OTHER, b: BAD });
    hub = await startMoonhub(['--plugins', dir.plugins, '--data', dir.data, '--no-watch']);
    ({ client } = await connectHttpClient(hub.url, 'modern'));
  });
  after(async () => {
    await client?.close();
    await hub?.stop();
  });

  it("does not hold the hub's thread, and every schema still holds at its first call", async (t) => {
    const admin = adminToken(dir.data);
    await hubLoopDelay(hub.url, admin);
    const honest = await honestClient(hub.url, 'other.echo');
    const flood = await call(client, 'flood', { count: REGISTRATIONS });
    const served = await honest.stop();
    const lag = await hubLoopDelay(hub.url, admin);
    t.diagnostic(
      `${flood.text}; hub event-loop delay p99 ${lag.p99} ms, worst ${lag.max} ms; ` +
        `other plugin: ${served.count} calls, p99 ${served.p99.toFixed(0)} ms, worst ${served.max.toFixed(0)} ms`,
    );
    assert.deepEqual(flood, { isError: false, text: `registered ${REGISTRATIONS}` });
    assert.ok(lag.max < 300, `the hub's thread was held ${lag.max} ms`);
    assert.equal(served.errors, 0, served.messages.join('; '));
    assert.ok(served.count > 0, 'the other plugin was called while the flood ran');

    // The newest definition of each tool is the one enforced, compiled when first called.
    const bad = await call(client, 'dyn3', { f1: 'x', count: -1 });
    assert.deepEqual(bad, {
      isError: true,
      text: "Invalid arguments for tool 'dyn3': argument 'count' must be >= 0",
    });
    const extra = await call(client, 'dyn4', { f1: 'x', nope: 1 });
    assert.equal(extra.text, "Invalid arguments for tool 'dyn4': unexpected argument 'nope'");
    assert.deepEqual(await call(client, 'dyn3', { f1: 'x', count: 3 }), {
      isError: false,
      text: 'dyn',
    });
    const listed = await client.listTools();
    const dyn3 = listed.tools.find((tool) => tool.name === 'dyn3');
    const props = dyn3?.inputSchema.properties as Record<string, { description?: string }>;
    assert.match(props.f1!.description!, /of definition \d+$/);
    assert.ok(hub.alive());
  });

  it('still refuses an invalid schema at the mcp.tool that registers it', async () => {
    // The worker's compile is what the hub now relies on: a bad schema never reaches the hub.
    const said = await call(client, 'bad.said');
    assert.match(said.text, /^false: .*tool 'bad': input_schema is not a valid JSON Schema/);
    const names = (await client.listTools()).tools.map((tool) => tool.name);
    assert.ok(names.includes('bad.said') && !names.includes('bad'));
  });
});
