/**
 * Answers an upstream sends through the SDK client's HTTP transport (its lists, prompts,
 * resources, the calls that do not take the direct path) were read whole: a hostile upstream's
 * `tools/list` of any size sat in the hub's memory before anything looked at it. They now take
 * the direct path's bound, `plugin_limits.upstream_answer_bytes` (upstream/bounded-fetch.ts).
 * Real hub, real upstream listing ~300 KB of tools against a 64 KiB bound.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Client } from '@modelcontextprotocol/client';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream.js';
import { connectHttpClient } from '../helpers/mcp-client.js';
import { startMoonhub, type MoonhubProcess } from '../helpers/moonhub-process.js';
import { call, scratch, type Scratch } from '../reliability/helpers.js';

let big: FakeUpstream;
let small: FakeUpstream;
let hub: MoonhubProcess;
let dir: Scratch;
let client: Client;

before(async () => {
  big = await startFakeUpstream();
  big.extraTools = Array.from({ length: 300 }, (_, i) => ({
    name: `t${i}`,
    description: 'd'.repeat(1000),
    inputSchema: { type: 'object' },
  }));
  small = await startFakeUpstream();
  dir = scratch('moonhub-sdk-answer-');
  dir.write(
    'plugins/p.lua',
    `local ok, err = mcp.proxy("${big.url}", { prefix = "big." })
     mcp.proxy("${small.url}", { prefix = "small." })
     mcp.tool("why", {}, function() return tostring(ok) .. " " .. tostring(err) end)
    `,
  );
  const config = dir.write(
    'moonhub.yaml',
    'plugins: { dirs: [plugins] }\nplugin_limits: { upstream_answer_bytes: 65536 }\n',
  );
  hub = await startMoonhub(['--config', config, '--no-watch']);
  ({ client } = await connectHttpClient(hub.url, 'modern'));
});

after(async () => {
  await client?.close();
  await hub?.stop();
  await big?.close();
  await small?.close();
  dir?.remove();
});

describe('answers through the SDK transport', () => {
  it('a list larger than plugin_limits.upstream_answer_bytes is not imported, naming the key', async () => {
    // mcp.proxy connected; the import failed, and the log says why.
    assert.equal((await call(client, 'why')).text, 'true nil');
    assert.match(
      hub.log(),
      /"err":"the upstream answer is larger than 65536 bytes \(plugin_limits.upstream_answer_bytes\)","msg":"could not import the upstream lists"/,
    );
    const names = (await client.listTools()).tools.map((t) => t.name);
    assert.ok(!names.some((n) => n.startsWith('big.')), names.join());
    // The other upstream, and the hub, are served as before.
    assert.ok(names.includes('small.work'), names.join());
    assert.deepEqual(await call(client, 'small.work', {}), { isError: false, text: 'worked' });
  });
});
