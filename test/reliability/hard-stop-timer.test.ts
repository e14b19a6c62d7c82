/**
 * The hub keeps one hard-stop timer per plugin, armed for the earliest deadline of its calls in
 * flight (isolated-plugin.ts). A call with a short limit made while a longer one is stuck in the
 * same worker must still be stopped at its own deadline, not the longer call's.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startMoonhub, type MoonhubProcess } from '../helpers/moonhub-process.js';
import { callTool, pluginsDir } from './isolation-helpers.js';

const SHORT_MS = 1000;

const PLUGIN = `
local stuck = function()
  return tostring(string.find(string.rep("a", 100000), ".-.-.-.-.-.-x"))
end
mcp.tool("t.long", { timeout_ms = 60000 }, stuck)
mcp.tool("t.short", { timeout_ms = ${SHORT_MS} }, stuck)
mcp.tool("t.ok", {}, function() return "alive" end)
mcp.tool("t.quick", { timeout_ms = ${SHORT_MS} }, function() return "quick" end)
mcp.tool("t.sleepy", {}, function() task.sleep(${SHORT_MS} + 1500) return "slept" end)
`;

let hub: MoonhubProcess;

before(async () => {
  hub = await startMoonhub([
    '--plugins',
    pluginsDir({ 't.lua': PLUGIN }),
    '--no-watch',
    '--drain-ms',
    '500',
  ]);
});

after(async () => {
  await hub?.stop();
});

describe('hard stop: one timer per plugin, armed for the earliest deadline', () => {
  it('a short call behind a stuck long one is stopped at its own deadline', async () => {
    const long = callTool(hub.url, 't.long');
    // The long call is in the worker (and its 60 s deadline armed) before the short one comes.
    await new Promise((r) => setTimeout(r, 200));
    const started = performance.now();
    const short = await callTool(hub.url, 't.short');
    const at = performance.now() - started;
    assert.equal(short.isError, true, `the short call answered ${short.text}`);
    assert.match(short.text, new RegExp(`timeout: .*${SHORT_MS} ms limit`));
    // Its limit plus the default grace, with room for a loaded CI box; far below the 60 s one.
    assert.ok(at < SHORT_MS + 5000, `the short call answered after ${at.toFixed(0)} ms`);
    // The restart failed the long call too, and the plugin answers again.
    const first = await long;
    assert.equal(first.isError, true);
    assert.match(first.text, /restarted/);
    assert.equal((await callTool(hub.url, 't.ok')).text, 'alive');
  });

  it('the timer fired for a finished short call does not stop a longer one', async () => {
    const sleepy = callTool(hub.url, 't.sleepy');
    await new Promise((r) => setTimeout(r, 100));
    // Arms the timer for its earlier deadline, then finishes; when it fires, the sweep finds
    // the sleepy call within its own (default) limit and re-arms for it.
    assert.equal((await callTool(hub.url, 't.quick')).text, 'quick');
    const answer = await sleepy;
    assert.equal(answer.isError, false, answer.text);
    assert.equal(answer.text, 'slept');
  });
});
