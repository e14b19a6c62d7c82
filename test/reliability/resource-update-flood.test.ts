/**
 * A plugin calling `mcp.resource_updated` in a loop (issue 12): each call was one message to the
 * hub's thread, fanned out to the subscribers, and in the cluster modes one bus message to every
 * other process, with no bound on the rate. Under `--workers 2`, ten seconds of it grew the
 * calling worker to 2.9 GiB (kept after) and its answer came 18 s after the loop ended; alone,
 * /healthz waited ~1-2 s. Now `plugin_limits.resource_updates_per_second` (default 1000) takes
 * them in the plugin's own thread and drops the rest, counted in one warning a second, and a URI
 * longer than any subscription may name is refused.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { request } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { startPluginHub, type PluginHub } from '../helpers/plugin-hub.js';
import { MODERN_META } from './flow-helpers.js';
import { call, honestClient, rssMiB } from './helpers.js';

const PLUGIN = String.raw`
mcp.tool("flood", {
  input_schema = { type = "object", properties = { secs = { type = "number" } } },
  timeout_ms = 60000,
}, function(p)
  local t0, n = os.clock(), 0
  while os.clock() - t0 < p.secs do
    for i = 1, 1000 do mcp.resource_updated("flood://hot") end
    n = n + 1000
  end
  return tostring(n)
end)
mcp.tool("long_uri", {}, function()
  mcp.resource_updated("flood://" .. string.rep("x", 5000))
  return "sent"
end)
mcp.resource("flood://hot", { name = "hot" }, function() return "hot" end)
`;

const CONFIG = `
plugins: { dirs: [plugins] }
cluster: { workers: 2 }
`;

const FLOOD_SECONDS = 4;
/**
 * The longest an honest call may take: a second less than the flood. Unbounded, the hub's thread
 * worked through the backlog first, so another client waited for the whole flood and more. The
 * gate still lets its first 1000 updates through at once, and on a 2-core box at load 11-14 (a
 * second test file beside this one) that burst held one call 1.2-2.2 s (4 of 20 runs past the
 * 1000 ms bound this had); the calls after it take tens of ms.
 */
const HONEST_MAX_MS = FLOOD_SECONDS * 1000 - 1000;
/** Growth of all the hub's processes allowed; unbounded, 3 s of the loop added ~1 GiB. */
const GROWTH_BOUND_MIB = 250;

let setup: PluginHub;

before(async () => {
  setup = await startPluginHub(
    // Another plugin: the flooding one's own thread is busy in its loop.
    { 'updates.lua': PLUGIN, 'ok.lua': 'mcp.tool("ok", {}, function() return "ok" end)' },
    (dir) => ['--config', dir.write('moonhub.yaml', CONFIG), '--no-watch'],
  );
});

after(() => setup?.stop());

/** The resident set of the primary and its worker processes, in MiB. */
function clusterRss(pid: number): number {
  const children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/);
  let total = rssMiB(pid);
  for (const c of children) if (c !== '') total += rssMiB(Number(c));
  return total;
}

/**
 * A 2026-07-28 listener of flood://hot; counts the updates it hears, event by event. It must
 * not keep the stream as one growing string tested on every chunk: that flattened the whole
 * text at each of ~4000 events (about 2 s of this process's CPU during the flood), which starved
 * the honest client running in the same process and made its p99 the flood's length.
 */
function listen(url: string) {
  let pending = '';
  let heard = 0;
  const req = request(url, {
    method: 'POST',
    agent: false,
    headers: {
      'Content-Type': 'application/json',
      Accept: 'application/json, text/event-stream',
      'MCP-Protocol-Version': '2026-07-28',
      'Mcp-Method': 'subscriptions/listen',
    },
  });
  const opened = new Promise<void>((resolve, reject) => {
    req.on('response', (res) => {
      res.setEncoding('utf8');
      res.on('data', (d: string) => {
        // SSE events end with a blank line; only the unfinished last one is kept.
        const events = (pending + d).split('\n\n');
        pending = events.pop() ?? '';
        for (const e of events) {
          if (e.includes('notifications/resources/updated')) heard++;
          else if (e.includes('subscriptions/acknowledged')) resolve();
        }
      });
    });
    req.on('error', reject);
  });
  req.end(
    JSON.stringify({
      jsonrpc: '2.0',
      id: 'l1',
      method: 'subscriptions/listen',
      params: { notifications: { resourceSubscriptions: ['flood://hot'] }, _meta: MODERN_META },
    }),
  );
  return {
    opened,
    updates: () => heard,
    close: () => req.destroy(),
  };
}

describe('a plugin calling mcp.resource_updated in a loop (--workers 2)', () => {
  it('is held to its rate: the call ends on time, RSS bounded, others served', async (t) => {
    const listener = listen(setup.hub.url);
    await listener.opened;
    const honest = await honestClient(setup.hub.url, 'ok');
    const pid = setup.hub.child.pid!;
    const rssBefore = clusterRss(pid);
    let maxRss = rssBefore;
    const sampler = setInterval(() => (maxRss = Math.max(maxRss, clusterRss(pid))), 100);
    const from = setup.hub.log().length;
    const t0 = performance.now();
    let calls: number;
    try {
      const r = await call(setup.client, 'flood', { secs: FLOOD_SECONDS });
      assert.equal(r.isError, false, r.text);
      calls = Number(r.text);
    } finally {
      clearInterval(sampler);
    }
    const took = performance.now() - t0;
    const h = await honest.stop();
    // Let the updates that passed reach the listener.
    await new Promise((r) => setTimeout(r, 500));
    const heard = listener.updates();
    listener.close();
    t.diagnostic(
      `${calls} calls in ${took.toFixed(0)} ms; the listener heard ${heard}; RSS ${rssBefore.toFixed(0)} -> max ${maxRss.toFixed(0)} MiB; honest ${h.count} calls, p50 ${h.p50.toFixed(1)} ms, p99 ${h.p99.toFixed(1)} ms, max ${h.max.toFixed(1)} ms`,
    );
    // Before: the answer waited for the hub's thread to work through every update.
    assert.ok(took < FLOOD_SECONDS * 1000 + 2000, `the flood's answer took ${took} ms`);
    assert.ok(maxRss - rssBefore < GROWTH_BOUND_MIB, `RSS grew ${maxRss - rssBefore} MiB`);
    assert.ok(heard >= 1, 'no update reached the listener');
    assert.ok(heard <= 1000 * (FLOOD_SECONDS + 2), `${heard} updates passed`);
    assert.equal(h.errors, 0, h.messages.join('; '));
    // Served all along: one call a second at least, none waiting for most of the flood.
    assert.ok(h.count >= FLOOD_SECONDS, `honest: ${h.count} calls`);
    assert.ok(h.max < HONEST_MAX_MS, `an honest call took ${h.max} ms`);
    await setup.hub.waitForLog(
      /\d+ mcp\.resource_updated calls dropped: at most 1000 per second \(plugin_limits\.resource_updates_per_second\)/,
      from,
    );
  });

  it('refuses a URI longer than a subscription may name', async () => {
    const r = await call(setup.client, 'long_uri');
    assert.equal(r.isError, true);
    assert.match(r.text, /a URI may be at most 4096 characters.*this one has 5008/);
    assert.equal((await call(setup.client, 'ok')).text, 'ok');
  });
});
