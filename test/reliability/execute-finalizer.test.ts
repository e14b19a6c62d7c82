/**
 * An execute run cannot leave its worker busy after its answer: a `__gc` finalizer that loops
 * runs when the run's state is closed, after the answer is sent and with no hook. The worker is
 * replaced after `execute.cleanup_ms` (one log line) and the next honest runs are served at once
 * (before, they waited 30 s for the stuck worker and failed).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startMoonhub, type MoonhubProcess } from '../helpers/moonhub-process.js';
import { callTool, configFile, pluginsDir } from './isolation-helpers.js';

const LOOPING_FINALIZER = `
setmetatable({}, { __gc = function() while true do end end })
return "answered"`;

let hub: MoonhubProcess;

before(async () => {
  const plugins = pluginsDir({ 'ping.lua': 'mcp.tool("ping", {}, function() return "pong" end)' });
  const config = configFile({
    plugins: { dirs: [plugins] },
    execute: { workers: 1, cleanup_ms: 500, timeout_ms: 5000 },
  });
  hub = await startMoonhub(['--config', config, '--no-watch']);
});

after(async () => {
  await hub?.stop();
});

describe('execute: a finalizer that loops after the answer', () => {
  it('answers, then the next honest runs are served at once by a replaced worker', async () => {
    const from = hub.log().length;
    const attack = await callTool(hub.url, 'execute', { code: LOOPING_FINALIZER });
    assert.equal(attack.isError, false, attack.text);
    assert.match(attack.text, /answered/);
    // With one worker, each of these would have to wait for the spinning one.
    for (let i = 0; i < 3; i++) {
      const honest = await callTool(hub.url, 'execute', { code: `return ${i} + 1` });
      assert.equal(honest.isError, false, honest.text);
      assert.match(honest.text, new RegExp(String(i + 1)));
      assert.ok(honest.ms < 5000, `run ${i} took ${honest.ms} ms`);
    }
    await hub.waitForLog(/did not become idle within 500 ms.*terminated and replaced/, from);
    // Other plugins were served all along.
    const ping = await callTool(hub.url, 'ping');
    assert.equal(ping.text, 'pong');
  });

  it('still ends a finalizer that loops during the run with the run timeout', async () => {
    const code = `
      for i = 1, 50 do setmetatable({}, { __gc = function() while true do end end }) end
      collectgarbage()
      return "never"`;
    const started = performance.now();
    const r = await callTool(hub.url, 'execute', { code, timeout_ms: 1000 });
    assert.equal(r.isError, true);
    assert.match(r.text, /timeout/);
    assert.ok(performance.now() - started < 1000 + 1000 + 1500, 'within its timeout plus a second');
    const honest = await callTool(hub.url, 'execute', { code: 'return 42' });
    assert.match(honest.text, /42/);
  });
});
