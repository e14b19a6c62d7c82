/**
 * An upstream's `notifications/tools/list_changed` makes the hub import its lists again. A
 * hostile one sending them in a loop: with the SDK's trailing 300 ms debounce, one every 350 ms
 * cost an import (a tools/list) each, and a faster stream put the import off for ever. Imports
 * are now paced (import-pacer.ts): one running, one waiting, and at most one per
 * `plugin_limits.upstream_import_interval_ms` for list_changed; an unpaced flood of
 * notifications disconnects the upstream. Real hub, real hostile upstream.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Client } from '@modelcontextprotocol/client';
import { startFloodUpstream, type FloodUpstream } from '../helpers/flood-upstream.js';
import { connectHttpClient } from '../helpers/mcp-client.js';
import { startMoonhub, type MoonhubProcess } from '../helpers/moonhub-process.js';
import { adminToken, hubLoopDelay } from '../helpers/operations.js';
import { call, scratch, type Scratch } from '../reliability/helpers.js';

const INTERVAL_MS = 1000;

let flood: FloodUpstream;
let hub: MoonhubProcess;
let dir: Scratch;
let client: Client;
let admin: string;

before(async () => {
  flood = await startFloodUpstream('list_changed');
  flood.everyMs = 60_000;
  dir = scratch('moonhub-list-changed-');
  dir.write(
    'plugins/p.lua',
    `mcp.proxy("${flood.url}", { prefix = "up." })
     mcp.tool("echo", {}, function() return "lua ok" end)
    `,
  );
  const config = dir.write(
    'moonhub.yaml',
    `plugins: { dirs: [plugins] }\nplugin_limits: { upstream_import_interval_ms: ${INTERVAL_MS} }\n`,
  );
  admin = adminToken(`${dir.dir}/data`);
  hub = await startMoonhub(['--config', config, '--data', `${dir.dir}/data`, '--no-watch']);
  await hub.waitForLog(/upstream imported/, 0, 15_000);
  ({ client } = await connectHttpClient(hub.url, 'modern'));
});

after(async () => {
  await client?.close();
  await hub?.stop();
  await flood?.close();
  dir?.remove();
});

/**
 * Runs the flood at one message every `everyMs` for `ms`, serving a client meanwhile: the
 * longest round trip (through this process, which writes the flood too) and the hub's own
 * event-loop delay meanwhile.
 */
async function floodFor(
  everyMs: number,
  ms: number,
): Promise<{ lists: number; longest: number; lag: { p99: number; max: number } }> {
  await hubLoopDelay(hub.url, admin);
  const health = hub.url.replace(/\/mcp$/, '/healthz');
  const before = flood.requests['tools/list'] ?? 0;
  flood.everyMs = everyMs;
  let longest = 0;
  const until = performance.now() + ms;
  while (performance.now() < until) {
    const t0 = performance.now();
    assert.equal((await fetch(health)).status, 200);
    assert.deepEqual(await call(client, 'echo'), { isError: false, text: 'lua ok' });
    longest = Math.max(longest, performance.now() - t0);
    await new Promise((r) => setTimeout(r, 20));
  }
  flood.everyMs = 60_000;
  const lag = await hubLoopDelay(hub.url, admin);
  return { lists: (flood.requests['tools/list'] ?? 0) - before, longest, lag };
}

/**
 * The hub's thread was never held long (its own event-loop delay) and a client's round trip
 * (through this process, which writes the flood as fast as the socket takes it) stayed short.
 * "Never frozen" bounds: session 14's CI saw a 525 ms round trip on a slowed machine against the
 * former 500 ms bound. What the hub's thread does with a flood is measured, not timed here: the
 * per-turn budget of upstream bytes (bounded-fetch.ts) took the unpaced flood's delay on an idle
 * machine from p99 204-228 / worst 218-359 ms to 56-77 / 166-201 ms (session 15).
 */
function assertResponsive(longest: number, lag: { p99: number; max: number }): void {
  process.stderr.write(
    `hub loop delay p99 ${lag.p99.toFixed(1)} ms, worst ${lag.max.toFixed(0)} ms; longest round trip ${longest.toFixed(0)} ms\n`,
  );
  assert.ok(lag.max < 1000, `the hub's event loop waited ${Math.round(lag.max)} ms`);
  assert.ok(longest < 1500, `a health check and a Lua call took ${Math.round(longest)} ms`);
}

describe('an upstream repeating list_changed', () => {
  it('costs one import per interval at most', async () => {
    const { lists } = await floodFor(350, 3500);
    // 3.5 intervals: at most 4 imports started in them, one more that was waiting.
    assert.ok(lists <= 5, `${lists} tools/list requests in 3.5 s`);
  });

  it('a fast stream cannot put the import off, and the hub stays responsive', async () => {
    await new Promise((r) => setTimeout(r, INTERVAL_MS));
    const { lists, longest, lag } = await floodFor(2, 3000);
    assert.ok(lists >= 2, `only ${lists} tools/list requests while the stream lasted`);
    assert.ok(lists <= 5, `${lists} tools/list requests in 3 s`);
    assertResponsive(longest, lag);
    assert.deepEqual(await call(client, 'up.work'), { isError: false, text: 'worked' });
  });

  it('an unpaced flood of notifications disconnects the upstream', async () => {
    const from = hub.log().length;
    const { longest, lag } = await floodFor(0, 3000);
    assertResponsive(longest, lag);
    await hub.waitForLog(/more than 5000 notifications in a second[^\n]*reconnecting/, from);
  });
});
