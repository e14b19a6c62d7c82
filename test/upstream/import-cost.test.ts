/**
 * An upstream listing thousands of tools whose definitions change at every `list_changed`:
 * each import re-registered them all in one turn of the hub's thread (hashing and, before
 * session 18, compiling each schema: ~2.7 s for 2,000 on a slow machine), once a second (the
 * import interval), so the hub was frozen most of the time. Now the import gives the thread back
 * every 20 ms (ImportSlices) and the next import waits at least ten times the last one's busy
 * time (ImportPacer), so one upstream's imports take about a tenth of the thread at most.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startFloodUpstream, type FloodUpstream } from '../helpers/flood-upstream.js';
import { startMoonhub, type MoonhubProcess } from '../helpers/moonhub-process.js';
import { adminToken, hubLoopDelay } from '../helpers/operations.js';
import { connectHttpClient } from '../helpers/mcp-client.js';
import { allToolNames, call, cpuMs, scratch, type Scratch } from '../reliability/helpers.js';

const TOOLS = 2000;
/** How long the upstream repeats list_changed (every 50 ms). */
const FLOOD_MS = 8000;
/** The hub thread's share of the flood's time it may spend: 9 % seen; 24 % with imports unpaced. */
const SHARE_BOUND = 0.2;
/** The longest the hub's event loop may wait; each import held it for seconds. */
const DELAY_BOUND_MS = 300;

let flood: FloodUpstream;
let hub: MoonhubProcess;
let dir: Scratch;
let admin: string;
let generation = 0;

/** Every listing is a new generation: new descriptions and property names, so new schemas. */
function tools(): unknown[] {
  const g = ++generation;
  return Array.from({ length: TOOLS }, (_, i) => ({
    name: `t${i}`,
    description: `tool ${i} of generation ${g}`,
    inputSchema: {
      type: 'object',
      properties: { [`g${g}a`]: { type: 'string', maxLength: 9 }, [`g${g}b`]: { type: 'integer' } },
      required: [`g${g}a`],
    },
  }));
}

before(async () => {
  flood = await startFloodUpstream('list_changed');
  flood.everyMs = 60_000;
  flood.toolsList = tools;
  dir = scratch('moonhub-import-cost-');
  dir.write(
    'plugins/p.lua',
    `mcp.proxy("${flood.url}", { prefix = "up." })
     mcp.tool("reprefix", { timeout_ms = 30000 }, function() mcp.proxy("${flood.url}", { prefix = "b." }) return "ok" end)`,
  );
  admin = adminToken(`${dir.dir}/data`);
  hub = await startMoonhub(['--plugins', `${dir.dir}/plugins`, '--data', `${dir.dir}/data`]);
  await hub.waitForLog(/upstream imported/, 0, 30_000);
});

after(async () => {
  await hub?.stop();
  await flood?.close();
  dir?.remove();
});

describe('an upstream re-listing thousands of changed tools', () => {
  it("takes a bounded share of the hub's thread, in short turns", async (t) => {
    const pid = hub.child.pid!;
    await hubLoopDelay(hub.url, admin);
    const lists0 = flood.requests['tools/list'] ?? 0;
    const cpu0 = cpuMs(pid, pid);
    flood.everyMs = 50;
    await new Promise((r) => setTimeout(r, FLOOD_MS));
    flood.everyMs = 60_000;
    const share = (cpuMs(pid, pid) - cpu0) / FLOOD_MS;
    const lag = await hubLoopDelay(hub.url, admin);
    const lists = (flood.requests['tools/list'] ?? 0) - lists0;
    t.diagnostic(
      `${lists} imports of ${TOOLS} changed tools in ${FLOOD_MS} ms; hub thread ${(share * 100).toFixed(0)} % busy; event-loop delay p99 ${lag.p99.toFixed(0)} ms, worst ${lag.max.toFixed(0)} ms`,
    );
    assert.ok(lists >= 1, 'the upstream was not imported again');
    assert.ok(share < SHARE_BOUND, `the hub's thread was ${(share * 100).toFixed(0)} % busy`);
    assert.ok(lag.max < DELAY_BOUND_MS, `the hub's event loop waited ${lag.max} ms`);
    await hub.waitForLog(new RegExp(`"tools":${TOOLS}[^\\n]*upstream imported`));
  });

  it('a refresh with a new prefix in the middle of an import ends with the new names only', async () => {
    const { client } = await connectHttpClient(hub.url, 'modern');
    try {
      flood.everyMs = 50; // imports under way while the prefix changes
      await new Promise((r) => setTimeout(r, 300));
      assert.equal((await call(client, 'reprefix')).text, 'ok');
      flood.everyMs = 60_000;
      let names: string[] = [];
      const settled = () =>
        names.filter((n) => n.startsWith('b.')).length === TOOLS &&
        !names.some((n) => n.startsWith('up.'));
      for (let i = 0; !settled(); i++) {
        assert.ok(
          i < 60,
          `after 30 s: ${names.filter((n) => n.startsWith('b.')).length} b.*, ${names.filter((n) => n.startsWith('up.')).length} up.*`,
        );
        await new Promise((r) => setTimeout(r, 500));
        names = await allToolNames(client);
      }
    } finally {
      await client.close();
    }
  });
});
