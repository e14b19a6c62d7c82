/**
 * Every tool registration compiles its input schema with ajv, and an ajv instance keeps every
 * schema it compiled. A plugin that registers its tools again on each call (careless or not),
 * or an upstream re-listed on each list_changed, grew the hub's heap by ~16 KiB a registration
 * without end (40,000 registrations of ten tools: 860 MiB). Known definitions are now compiled
 * once and ajv instances are replaced, so the hub's memory stays bounded.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Client } from '@modelcontextprotocol/client';
import { connectHttpClient } from '../helpers/mcp-client.js';
import { startMoonhub, type MoonhubProcess } from '../helpers/moonhub-process.js';
import { call, rssMiB, scratch, type Scratch } from './helpers.js';

const PER_CALL = 250;
const CALLS = 24;

let hub: MoonhubProcess;
let dir: Scratch;
let client: Client;

before(async () => {
  dir = scratch('moonhub-compiles-');
  // `same` registers the same ten definitions again; `fresh` makes each one new (a counter in
  // its description), as a plugin generating tools would.
  dir.write(
    'plugins/p.lua',
    `local n = 0
     local function again(fresh)
       for i = 1, ${PER_CALL} do
         n = n + 1
         local d = fresh and ("field " .. n) or "field"
         mcp.tool("dyn" .. (i % 10), { input_schema = { type = "object", properties = {
           a = { type = "string", description = string.rep("x", 200) .. d },
           b = { type = "integer", minimum = 0 } }, required = { "a" } } },
           function() return "d" end)
       end
       return "ok"
     end
     mcp.tool("same", {}, function() return again(false) end)
     mcp.tool("fresh", {}, function() return again(true) end)
    `,
  );
  const config = dir.write('moonhub.yaml', 'plugins: { dirs: [plugins] }\n');
  hub = await startMoonhub(['--config', config, '--no-watch']);
  ({ client } = await connectHttpClient(hub.url, 'modern'));
});

after(async () => {
  await client?.close();
  await hub?.stop();
  dir?.remove();
});

describe('schema compiles', () => {
  for (const tool of ['same', 'fresh']) {
    it(`${CALLS * PER_CALL} registrations (${tool} definitions) leave memory bounded`, async () => {
      for (let i = 0; i < 4; i++) await call(client, tool);
      const before = rssMiB(hub.child.pid!);
      for (let i = 0; i < CALLS; i++) assert.equal((await call(client, tool)).text, 'ok');
      const grown = rssMiB(hub.child.pid!) - before;
      assert.ok(grown < 80, `the hub grew ${Math.round(grown)} MiB`);
      const r = await call(client, 'dyn3', { a: 'x', b: -1 });
      assert.deepEqual(r, {
        isError: true,
        text: "Invalid arguments for tool 'dyn3': argument 'b' must be >= 0",
      });
    });
  }
});
