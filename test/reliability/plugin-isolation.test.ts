/**
 * Plugin isolation with hard stops, against a real hub process: while one plugin's handler spins
 * where no hook reaches (a catastrophic pattern match, a looping `__gc` finalizer, a looping
 * `xpcall` message handler) or in plain Lua, another plugin keeps answering (p99 bound below),
 * the spinning call ends with its limit's error within its timeout plus one second, the plugin is
 * restarted with one log line and answers again, and a call of another plugin already in flight
 * is unaffected. SIGTERM still stops the hub while a plugin spins.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startMoonhub, type MoonhubProcess } from '../helpers/moonhub-process.js';
import { callTool, percentile, pluginsDir, probeWhile } from './isolation-helpers.js';

/** The other plugin's p99 while an attack runs (a loaded 2-core CI box; ~5-20 ms when idle). */
const P99_BOUND_MS = 250;
/** Each attack's own limit; it must answer within this plus one second. */
const LIMIT_MS = 1000;

const GOOD = `
mcp.tool("good.echo", {}, function(p) return "echo:" .. tostring(p.text) end)
mcp.tool("good.slow", {}, function() task.sleep(1500) return "slow done" end)
`;

const BAD = `
local opts = { timeout_ms = ${LIMIT_MS} }
mcp.tool("bad.spin", opts, function() while true do end end)
mcp.tool("bad.pattern", opts, function()
  return tostring(string.find(string.rep("a", 100000), ".-.-.-.-.-.-x"))
end)
mcp.tool("bad.gc", opts, function()
  setmetatable({}, { __gc = function() while true do end end })
  collectgarbage()
  return "unreachable"
end)
mcp.tool("bad.xpcall", opts, function()
  xpcall(function() error("boom") end, function() while true do end end)
  return "unreachable"
end)
mcp.tool("bad.long", { timeout_ms = 60000 }, function()
  return tostring(string.find(string.rep("a", 100000), ".-.-.-.-.-.-x"))
end)
mcp.tool("bad.ok", {}, function() return "alive" end)
`;

let hub: MoonhubProcess;

before(async () => {
  hub = await startMoonhub([
    '--plugins',
    pluginsDir({ 'good.lua': GOOD, 'bad.lua': BAD }),
    '--no-watch',
    // SIGTERM lets calls in flight finish for this long (graceful shutdown), then stops them.
    '--drain-ms',
    '1000',
  ]);
});

after(async () => {
  await hub?.stop();
});

describe('plugin isolation: a stuck handler stops only itself', () => {
  for (const [tool, kind] of [
    ['bad.spin', 'a plain Lua loop'],
    ['bad.pattern', 'a catastrophic pattern match (one long C call)'],
    ['bad.gc', 'a looping __gc finalizer (no hook)'],
    ['bad.xpcall', 'a looping xpcall message handler (no hook)'],
  ] as const) {
    it(`${tool}: ${kind}`, async () => {
      const from = hub.log().length;
      const inFlight = callTool(hub.url, 'good.slow');
      const started = performance.now();
      const attack = callTool(hub.url, tool).then((r) => ({
        ...r,
        at: performance.now() - started,
      }));
      const probe = await probeWhile(attack, hub.url, 'good.echo', { text: 'hi' });
      const answer = await attack;

      assert.equal(answer.isError, true, `the attack answered ${answer.text}`);
      assert.match(answer.text, /timeout/);
      assert.ok(answer.at < LIMIT_MS + 1000, `answered after ${answer.at.toFixed(0)} ms`);

      assert.deepEqual(probe.failures, []);
      assert.ok(probe.latencies.length >= 5, `only ${probe.latencies.length} probes`);
      const p99 = percentile(probe.latencies, 99);
      assert.ok(p99 < P99_BOUND_MS, `good.echo p99 ${p99.toFixed(1)} ms during the attack`);

      const slow = await inFlight;
      assert.equal(slow.text, 'slow done', 'the other plugin’s call in flight is unaffected');

      // Usable again; the hard stops (not the soft ones) say so once in the log.
      const ok = await callTool(hub.url, 'bad.ok');
      assert.equal(ok.text, 'alive');
      if (tool !== 'bad.spin') await hub.waitForLog(/plugin restarted: the handler of tool/, from);
      console.log(
        `${tool}: answered in ${answer.at.toFixed(0)} ms; good.echo ${probe.latencies.length} calls, p50 ${percentile(probe.latencies, 50).toFixed(1)} ms, p99 ${p99.toFixed(1)} ms`,
      );
    });
  }

  it('SIGTERM stops the hub while a plugin is stuck in one long C call', async () => {
    const attack = callTool(hub.url, 'bad.long').catch(() => undefined);
    await new Promise((r) => setTimeout(r, 300));
    assert.equal((await callTool(hub.url, 'good.echo', { text: 'x' })).text, 'echo:x');
    const started = performance.now();
    await hub.stop();
    // The stuck call is stopped at the drain deadline (1 s), not left running.
    assert.ok(performance.now() - started < 5000, 'the hub exited on SIGTERM');
    await attack;
  });
});
