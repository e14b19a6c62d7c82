/**
 * A request id reused within a 2025 session while its call still runs, against a real hub. The
 * second request used to take the first one's place in the session's calls in flight: the first
 * could then not be cancelled, and went on running when the session was deleted. Now the reuse
 * is refused (-32600 request_id_in_use) and the first call stays the session's.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { makeHubDir, type HubDir } from '../helpers/auth-hub.js';
import { startMoonhub, type MoonhubProcess } from '../helpers/moonhub-process.js';
import { initialize, post } from '../reliability/limits-helpers.js';

const PLUGIN = `mcp.tool("p.wait", { description = "waits" }, function(args)
  task.sleep(args.ms or 3000)
  return "waited"
end)`;

describe('request ids in flight in a 2025 session', () => {
  let dir: HubDir;
  let hub: MoonhubProcess;

  before(async () => {
    dir = makeHubDir({ p: PLUGIN });
    hub = await startMoonhub(['--plugins', dir.plugins, '--data', dir.data, '--no-watch']);
  });
  after(async () => hub?.stop());

  it('refuses an id still in use; the first call stays cancellable by the session', async () => {
    const sid = (await initialize(hub.url)).sid!;
    const headers = { 'Mcp-Session-Id': sid, 'MCP-Protocol-Version': '2025-11-25' };
    const call = (ms: number) =>
      post(
        hub.url,
        {
          jsonrpc: '2.0',
          id: 'x',
          method: 'tools/call',
          params: { name: 'p.wait', arguments: { ms } },
        },
        headers,
      );
    const started = Date.now();
    const first = call(3000);
    await new Promise((r) => setTimeout(r, 300));
    const second = await call(10);
    assert.equal(second.body?.error?.code, -32600);
    assert.match(second.body!.error!.message, /request id "x" is already used by a call/);
    // Ending the session stops the first call (it is still the session's).
    const del = await fetch(hub.url, { method: 'DELETE', headers });
    assert.equal(del.status, 200);
    const answer = await first;
    assert.match(answer.text, /cancelled/);
    assert.ok(Date.now() - started < 2500, 'the first call stopped with its session');
  });
});
