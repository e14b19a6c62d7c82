/**
 * A plugin whose code posts to the hub's thread in a loop that never yields (registering and
 * removing a tool, begin/end_batch, mcp.reset): its worker posted faster than the hub handled,
 * the port's queue grew, and the hub then handled the backlog in one go. Ten seconds of
 * register/remove held /healthz for 6.6 s; begin/end_batch for 5 s, 3.3 s and +700 MiB. The
 * worker now waits for the hub once 1024 of its messages are not yet handled (plugin-worker.ts).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startPluginHub, type PluginHub } from '../helpers/plugin-hub.js';
import { call, honestClient, longestHealthWait, rssMiB } from './helpers.js';

const PLUGIN = String.raw`
mcp.tool("churn", {
  input_schema = { type = "object", properties = { secs = { type = "number" }, what = { type = "string" } } },
  timeout_ms = 60000,
}, function(p)
  local t0, n = os.clock(), 0
  while os.clock() - t0 < p.secs do
    for i = 1, 100 do
      if p.what == "batch" then mcp.begin_batch(); mcp.end_batch()
      else mcp.tool("tmp", {}, function() return 1 end); mcp.remove_tool("tmp") end
    end
    n = n + 100
    if p.what ~= "batch" then collectgarbage() end
  end
  return tostring(n)
end)
`;

/** The longest /healthz may wait; before, several seconds. */
const HEALTH_BOUND_MS = 1000;
const GROWTH_BOUND_MIB = 250;

let setup: PluginHub;

before(async () => {
  setup = await startPluginHub({
    'churn.lua': PLUGIN,
    'ok.lua': 'mcp.tool("ok", {}, function() return "ok" end)',
  });
});

after(() => setup?.stop());

describe('a plugin posting to the hub in a loop that never yields', () => {
  // register/remove held /healthz up to 1.6 s even with the bound: each change was written to
  // every list_changed stream (this test's clients hold 2026 listen streams). The fan-out now
  // coalesces (list-changed.ts, test list-changed-churn); begin/end_batch is the bound alone.
  for (const what of ['register', 'batch']) {
    it(`(${what}) waits for the hub: /healthz answers, RSS bounded, others served`, async (t) => {
      const honest = await honestClient(setup.hub.url, 'ok');
      const pid = setup.hub.child.pid!;
      const rssBefore = rssMiB(pid);
      let maxRss = rssBefore;
      const sampler = setInterval(() => (maxRss = Math.max(maxRss, rssMiB(pid))), 50);
      const work = call(setup.client, 'churn', { secs: 4, what });
      let worst: number;
      try {
        worst = await longestHealthWait(setup.hub.url, work, 20);
      } finally {
        clearInterval(sampler);
      }
      const r = await work;
      const h = await honest.stop();
      t.diagnostic(
        `${r.text} rounds; /healthz worst ${worst.toFixed(0)} ms; RSS ${rssBefore.toFixed(0)} -> ${maxRss.toFixed(0)} MiB; honest ${h.count}, p99 ${h.p99.toFixed(1)} ms`,
      );
      assert.equal(r.isError, false, r.text);
      assert.ok(worst < HEALTH_BOUND_MS, `/healthz waited ${worst} ms`);
      assert.ok(maxRss - rssBefore < GROWTH_BOUND_MIB, `RSS grew ${maxRss - rssBefore} MiB`);
      assert.equal(h.errors, 0, h.messages.join('; '));
      assert.ok(h.count > 0);
    });
  }
});
