/**
 * Definition warnings (a schema pattern the hub does not enforce, a name no call can reach) are
 * logged by the hub. A plugin registering such definitions in a loop wrote a log line per
 * registration, without end. Now each different warning is logged once and at most
 * MAX_LOGGED per load, with one line saying the rest are counted; the plugin's status keeps the
 * first 20 and the count.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Client } from '@modelcontextprotocol/client';
import { makeHubDir } from '../helpers/auth-hub.js';
import { connectHttpClient } from '../helpers/mcp-client.js';
import { startMoonhub, type MoonhubProcess } from '../helpers/moonhub-process.js';
import { call } from './helpers.js';
import { MAX_LOGGED } from '../../src/plugins/plugin-warnings.js';

const PLUGIN = String.raw`
local function define(name)
  mcp.tool(name, { input_schema = { type = "object",
    properties = { a = { type = "string", pattern = "(?<=x)y" } } } }, function() return "d" end)
end
mcp.tool("many", {}, function(args)
  for i = 1, args.count do define("w" .. i) end
  return "ok"
end)
mcp.tool("same", {}, function(args)
  for i = 1, args.count do define("w1") end
  return "ok"
end)
`;

describe('definition warnings in a loop', () => {
  let hub: MoonhubProcess;
  let client: Client;

  before(async () => {
    const dir = makeHubDir({ w: PLUGIN });
    hub = await startMoonhub(['--plugins', dir.plugins, '--data', dir.data, '--no-watch']);
    ({ client } = await connectHttpClient(hub.url, 'modern'));
  });
  after(async () => {
    await client?.close();
    await hub?.stop();
  });

  const warned = () =>
    hub
      .log()
      .split('\n')
      .filter((l) => /input_schema pattern\(s\) \/\(\?<=x\)y\//.test(l));

  it('logs each different warning once', async () => {
    assert.equal((await call(client, 'same', { count: 300 })).text, 'ok');
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(warned().length, 1, warned().slice(0, 3).join('\n'));
  });

  it('logs at most MAX_LOGGED per load, then says the rest are counted', async () => {
    assert.equal((await call(client, 'many', { count: MAX_LOGGED + 300 })).text, 'ok');
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(warned().length, MAX_LOGGED);
    const last = hub.log().match(/definition warnings logged for this load/g) ?? [];
    assert.equal(last.length, 1);
    const status = await call(client, 'hub_status');
    assert.match(
      status.text,
      /\.\.\. and \d+ more \(the hub's log has the first 200 of this load\)/,
    );
    assert.ok(hub.alive());
  });
});
