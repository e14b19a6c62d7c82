/**
 * What a hostile upstream lists is imported with bounds: at most `plugin_limits.registrations`
 * tools (prompts, resources) per upstream, the rest skipped with a warning (20,000 tools took
 * 1 GiB and 7 s of the hub's thread each import before), and a re-import (list_changed, or a
 * second `mcp.proxy`) compiles only the tools whose definition changed.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Client } from '@modelcontextprotocol/client';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream.js';
import { connectHttpClient } from '../helpers/mcp-client.js';
import { startMoonhub, type MoonhubProcess } from '../helpers/moonhub-process.js';
import { call, longestHealthWait, scratch, type Scratch } from '../reliability/helpers.js';

const LIMIT = 1500;
const LISTED = 3000;

let fake: FakeUpstream;
let hub: MoonhubProcess;
let dir: Scratch;
let client: Client;

before(async () => {
  fake = await startFakeUpstream();
  // Each definition differs, so none is compiled once for all.
  fake.extraTools = Array.from({ length: LISTED }, (_, i) => ({
    name: `t${i}`,
    inputSchema: {
      type: 'object',
      properties: { a: { type: 'string', maxLength: i + 1 }, b: { type: 'integer' } },
    },
  }));
  dir = scratch('moonhub-import-bounds-');
  dir.write(
    'plugins/p.lua',
    `mcp.proxy("${fake.url}", { prefix = "up." })
     mcp.tool("refresh", {}, function() return tostring(mcp.proxy("${fake.url}", { prefix = "up." })) end)
    `,
  );
  const config = dir.write(
    'moonhub.yaml',
    `plugins: { dirs: [plugins] }\nplugin_limits: { registrations: ${LIMIT} }\n`,
  );
  hub = await startMoonhub(['--config', config, '--no-watch']);
  await hub.waitForLog(/upstream imported/, 0, 20_000);
  ({ client } = await connectHttpClient(hub.url, 'modern'));
});

after(async () => {
  await client?.close();
  await hub?.stop();
  await fake?.close();
  dir?.remove();
});

describe('importing a long upstream list', () => {
  it('imports at most plugin_limits.registrations tools and says so', async () => {
    const status = await call(client, 'hub_status');
    assert.equal(status.isError, false);
    assert.match(
      hub.log(),
      new RegExp(`"listed":${LISTED + 1},"imported":${LIMIT}[^\\n]*plugin_limits.registrations`),
    );
    assert.deepEqual(await call(client, 'up.t7', { a: 'x' }), { isError: false, text: 'worked' });
    await assert.rejects(call(client, `up.t${LISTED - 1}`), /Unknown tool: up\.t2999/);
  });

  it('a re-import registers only what changed, without holding the hub', async () => {
    for (let i = 0; i < 3; i++) {
      const from = hub.log().length;
      const refresh = call(client, 'refresh');
      const longest = await longestHealthWait(hub.url, refresh);
      assert.equal((await refresh).text, 'true');
      await hub.waitForLog(/upstream imported/, from);
      assert.ok(longest < 400, `the hub's thread stalled ${Math.round(longest)} ms`);
    }
    const r = await call(client, 'up.t7', { a: 'x'.repeat(9) });
    assert.equal(r.isError, true);
    assert.match(r.text, /argument 'a' must NOT have more than 8 characters/);
  });
});
