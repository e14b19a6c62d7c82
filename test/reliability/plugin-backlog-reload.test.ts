/**
 * The plugin worker's backlog bound (src/plugins/sync-flag.ts) across a reload. A worker waiting
 * for the hub to catch up asked the hub ('caughtUp') and waited for its answer; when the hub
 * stopped serving that worker meanwhile (the reload retired it, its sync port was closed), the
 * hub still handled the backlog and answered on the closed port: the answer was dropped, the
 * flag still woke the worker, and it failed with "the hub's answer to 'caughtUp' was lost" (or,
 * asking after the close, waited until terminated). The worker now waits on the hub's count
 * itself, and the hub's close tells it. And a plugin registering 5,000 tools (past the bound
 * several times at load) reloads complete while a client lists tools.
 */
import assert from 'node:assert/strict';
import { utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import type { Client } from '@modelcontextprotocol/client';
import { connectHttpClient } from '../helpers/mcp-client.js';
import { startPluginHub, type PluginHub } from '../helpers/plugin-hub.js';
import { call } from './helpers.js';

// A task of the plugin's top level posts in a loop that never yields until the reload unloads it
// (20 s at most; it starts once the load is done); it prints how it ended (pcall's error), so the
// test reads what the old generation saw. It ran 3-4 s before, and a reload slower than that on a
// loaded CI machine found it already ended ("flood ended: nil"). The reload loads QUIET.
const FLOOD = String.raw`
mcp.tool("ok", {}, function() return "ok" end)
task.spawn(function()
  task.sleep(100)
  local ok, err = pcall(function()
    local stop = os.time() + 20
    while os.time() < stop do
      for i = 1, 100 do mcp.begin_batch(); mcp.end_batch() end
    end
  end)
  print("flood ended: " .. tostring(err))
end)
`;

const QUIET = 'mcp.tool("ok", {}, function() return "ok" end)';

const MANY = 5000;
const manyPlugin = (n: number) => String.raw`
local function echo(p) return p.text end
for i = 1, ${n} do
  mcp.tool("t" .. i, {
    description = "Echo tool number " .. i,
    input_schema = { type = "object", properties = { text = { type = "string" } }, required = { "text" } },
  }, echo)
end
`;

const started: PluginHub[] = [];

after(async () => {
  for (const s of started) await s.stop();
});

/** A hub on `files`, watching them (the tests reload by touching a file). */
async function hubWith(files: Record<string, string>): Promise<PluginHub> {
  const s = await startPluginHub(files, (dir) => ['--plugins', `${dir.dir}/plugins`]);
  started.push(s);
  return s;
}

function touch(path: string): void {
  const now = new Date();
  utimesSync(path, now, now);
}

/** Every tool name the client sees, page by page. */
async function allTools(client: Client): Promise<string[]> {
  const names: string[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < 200; page++) {
    const r = await client.listTools(cursor === undefined ? {} : { cursor });
    // The plugin's own (the hub adds tools of its own).
    for (const t of r.tools) if (/^t\d+$/.test(t.name)) names.push(t.name);
    cursor = r.nextCursor;
    if (cursor === undefined) return names;
  }
  throw new Error('more than 200 pages of tools');
}

describe('the backlog bound across a reload', () => {
  it('a worker waiting on its backlog when the hub unloads it is told, not left hanging', async () => {
    const { hub, dir } = await hubWith({ 'flood.lua': FLOOD });
    // The old generation is flooding (and waiting on the hub) when the reload retires it.
    await new Promise((r) => setTimeout(r, 300));
    const from = hub.log().length;
    writeFileSync(join(dir.dir, 'plugins/flood.lua'), QUIET);
    await hub.waitForLog(/plugin reloaded/, from, 20_000);
    // The old generation's flood ends at once with the hub's reason (before: "the hub's answer
    // to 'caughtUp' was lost", or no line: it waited on a closed port until terminated).
    const line = await hub.waitForLog(/flood ended: [^\n"]*/, from, 2000);
    assert.match(line, /the hub stopped serving this plugin's worker/);
    assert.doesNotMatch(hub.log(), /was lost/);
    const { client } = await connectHttpClient(hub.url, 'modern');
    try {
      assert.equal((await call(client, 'ok')).text, 'ok');
    } finally {
      await client.close();
    }
  });

  it(`a plugin registering ${MANY} tools reloads complete while a client lists`, async () => {
    const { hub, dir, client } = await hubWith({ 'many.lua': manyPlugin(MANY) });
    assert.equal((await allTools(client)).length, MANY);
    const from = hub.log().length;
    let reloaded = false;
    const done = hub.waitForLog(/plugin reloaded/, from, 30_000);
    done.then(
      () => (reloaded = true),
      () => undefined,
    );
    touch(join(dir.dir, 'plugins/many.lua'));
    // Every listing while the new generation loads (and after) holds the whole set: the
    // reload replaces the previous generation's tools in one batch.
    let listings = 0;
    const t0 = performance.now();
    while (!reloaded && performance.now() - t0 < 30_000) {
      const names = await allTools(client);
      assert.equal(names.length, MANY, `listing ${listings} during the reload`);
      listings++;
    }
    await done;
    const names = await allTools(client);
    assert.equal(new Set(names).size, MANY);
    assert.ok(names.includes(`t${MANY}`));
    assert.equal(
      (await call(client, `t${MANY}`, { text: 'back' })).text,
      'back',
      'the reloaded generation serves',
    );
    assert.doesNotMatch(hub.log().slice(from), /failed to reload|was lost|did not answer/);
  });
});
