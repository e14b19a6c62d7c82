/**
 * End to end: a Lua tool waiting in `task.sleep` stops when its caller cancels, in both eras
 * (2025: `notifications/cancelled`; 2026-07-28: the request's connection closing). The hub reads
 * a call's abort signal only once the call first waits, so these guard that lazy path.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { connectHttpClient, type Era } from '../helpers/mcp-client.js';
import { startMoonhub, type MoonhubProcess } from '../helpers/moonhub-process.js';

const PLUGIN = String.raw`
-- Test plugin: "wait.slow" records that it finished; "wait.finished" reports it.
local finished = {}
mcp.tool("wait.slow", {
  input_schema = { type = "object", properties = { key = { type = "string" } }, required = { "key" } },
}, function(p)
  task.sleep(400)
  finished[p.key] = true
  return "done"
end)
mcp.tool("wait.finished", {
  input_schema = { type = "object", properties = { key = { type = "string" } }, required = { "key" } },
}, function(p)
  return tostring(finished[p.key] == true)
end)
`;

describe('a waiting Lua tool is cancelled by its caller', () => {
  let hub: MoonhubProcess;

  before(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'moonhub-cancel-'));
    writeFileSync(join(dir, 'wait.lua'), PLUGIN);
    hub = await startMoonhub(['--plugins', dir, '--no-watch']);
  });
  after(async () => {
    await hub?.stop();
  });

  for (const era of ['legacy', 'modern'] as Era[]) {
    it(`stops the coroutine when a ${era} client aborts the call`, async () => {
      const { client } = await connectHttpClient(hub.url, era);
      try {
        const text = async (name: string, key: string, signal?: AbortSignal) => {
          const r = await client.callTool({ name, arguments: { key } }, { signal });
          return (r.content as { text: string }[])[0]!.text;
        };
        // Without a cancel the tool runs to its end: the probe can see it.
        assert.equal(await text('wait.slow', `${era}-kept`), 'done');
        assert.equal(await text('wait.finished', `${era}-kept`), 'true');

        const ctl = new AbortController();
        const call = text('wait.slow', `${era}-cut`, ctl.signal);
        await new Promise((r) => setTimeout(r, 100));
        ctl.abort(new Error('changed my mind'));
        await assert.rejects(call);
        // Past the sleep the tool would have finished, had the abort not reached it.
        await new Promise((r) => setTimeout(r, 600));
        assert.equal(await text('wait.finished', `${era}-cut`), 'false');
        assert.ok(hub.alive());
      } finally {
        await client.close();
      }
    });
  }
});
