/**
 * An upstream's log messages (`notifications/message`) that no call of ours is waiting for go
 * to the hub's log. An upstream sending them in a loop wrote one line each, as big as it liked:
 * ~1,000 lines of 8 KB a second. They are now bounded per upstream (upstream/log-gate.ts): 20
 * lines a second, the data cut to 2,048 characters, the rest counted in one line a second.
 * Real hub, real hostile upstream.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startFloodUpstream, type FloodUpstream } from '../helpers/flood-upstream.js';
import { connectHttpClient } from '../helpers/mcp-client.js';
import { startMoonhub, type MoonhubProcess } from '../helpers/moonhub-process.js';
import { call, scratch, type Scratch } from '../reliability/helpers.js';

let flood: FloodUpstream;
let hub: MoonhubProcess;
let dir: Scratch;

before(async () => {
  flood = await startFloodUpstream('log');
  flood.everyMs = 60_000;
  dir = scratch('moonhub-log-flood-');
  dir.write(
    'plugins/p.lua',
    `mcp.proxy("${flood.url}", { prefix = "up." })
     mcp.tool("echo", {}, function() return "lua ok" end)
    `,
  );
  const config = dir.write('moonhub.yaml', 'plugins: { dirs: [plugins] }\n');
  hub = await startMoonhub(['--config', config, '--no-watch']);
  await hub.waitForLog(/upstream imported/, 0, 15_000);
});

after(async () => {
  await hub?.stop();
  await flood?.close();
  dir?.remove();
});

describe('an upstream flooding log messages', () => {
  it('writes at most 20 bounded lines a second to the hub log, and says how many it left out', async () => {
    const { client } = await connectHttpClient(hub.url, 'modern');
    const from = hub.log().length;
    const sentBefore = flood.sent;
    flood.everyMs = 1;
    await new Promise((r) => setTimeout(r, 2000));
    flood.stop();
    const sent = flood.sent - sentBefore;
    assert.deepEqual(await call(client, 'echo'), { isError: false, text: 'lua ok' });
    await hub.waitForLog(/were not logged/, from, 5000);
    await client.close();
    const lines = hub
      .log()
      .slice(from)
      .split('\n')
      .filter((l) => l.includes('upstream log message'));
    assert.ok(sent >= 400, `the flood sent only ${sent} messages`);
    // Two seconds of flood span at most three one-second windows.
    assert.ok(lines.length >= 20 && lines.length <= 60, `${lines.length} lines for ${sent} sent`);
    const longest = Math.max(...lines.map((l) => l.length));
    assert.ok(longest < 2600, `a line of ${longest} characters`);
    assert.match(lines[0]!, /L{100}.*… \(cut\)/);
  });
});
