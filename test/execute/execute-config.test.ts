/**
 * The config file's `execute` key with a real `moonhub serve`: tight limits from the file make
 * scripts fail with the named reason, `execute: false` leaves the tool out (search_tools stays),
 * and bad values are refused at startup with a message naming the key.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Client } from '@modelcontextprotocol/client';
import { connectHttpClient } from '../helpers/mcp-client.js';
import { startMoonhub, type MoonhubProcess } from '../helpers/moonhub-process.js';
import { makeHubDir, moonhubCli, scopedPlugin, type HubDir } from '../helpers/auth-hub.js';

const TIGHT = `
plugins: { dirs: [plugins] }
execute:
  timeout_ms: 300
  max_timeout_ms: 1000
  instructions: 100000
  output_bytes: 64
  max_calls: 2
  root: scripts
  code_cache_bytes: 0
`;

async function failure(client: Client, code: string): Promise<string> {
  const r = await client.callTool({ name: 'execute', arguments: { code } });
  assert.equal(r.isError, true, JSON.stringify(r));
  return (r.structuredContent as { error: string }).error;
}

describe('execute limits from the config file', () => {
  let dir: HubDir;
  let hub: MoonhubProcess;
  let client: Client;

  before(async () => {
    dir = makeHubDir({ alpha: scopedPlugin('alpha') });
    hub = await startMoonhub(['--config', dir.write('moonhub.yaml', TIGHT), '--no-watch']);
    client = (await connectHttpClient(hub.url, 'modern')).client;
  });
  after(async () => {
    await client.close();
    await hub.stop();
  });

  it('fails a script on each limit of the file, naming it', async () => {
    assert.match(await failure(client, 'while true do end'), /^instruction budget exceeded/);
    assert.match(
      await failure(client, 'for i = 1, 20 do print("0123456789") end'),
      /output limit exceeded: a script may print at most 64 bytes/,
    );
    assert.match(await failure(client, 'task.sleep(2000)'), /^timeout/);
    const calls = await client.callTool({
      name: 'execute',
      arguments: {
        code: 'local r = task.await({mcp.call("alpha.echo"), mcp.call("alpha.echo"), mcp.call("alpha.echo")}) return r[3].content',
      },
    });
    assert.match(
      String((calls.structuredContent as { result: string }).result),
      /^call limit exceeded: a script may start at most 2 calls/,
    );
    assert.ok(hub.alive());
  });

  it("publishes the file's wall-time ceiling in the tool's schema", async () => {
    const tool = (await client.listTools()).tools.find((t) => t.name === 'execute')!;
    const props = tool.inputSchema.properties as Record<string, { maximum?: number }>;
    assert.equal(props.timeout_ms!.maximum, 1000);
    assert.match(JSON.stringify(props), /default 300\)/);
  });
});

describe('execute: false in the config file', () => {
  it('leaves execute out and keeps search_tools', async () => {
    const dir = makeHubDir({ alpha: scopedPlugin('alpha') });
    const config = dir.write('moonhub.yaml', 'plugins: { dirs: [plugins] }\nexecute: false\n');
    const hub = await startMoonhub(['--config', config, '--no-watch']);
    const { client } = await connectHttpClient(hub.url, 'modern');
    try {
      const names = (await client.listTools()).tools.map((t) => t.name);
      assert.ok(!names.includes('execute'), names.join());
      assert.ok(names.includes('search_tools'));
      await assert.rejects(
        client.callTool({ name: 'execute', arguments: { code: 'return 1' } }),
        /Unknown tool: execute/,
      );
    } finally {
      await client.close();
      await hub.stop();
    }
  });
});

describe('bad execute settings', () => {
  const cases: [string, string, RegExp][] = [
    ['zero workers', 'execute: { workers: 0 }', /'execute\.workers' must be >= 1/],
    [
      'a string limit',
      'execute: { instructions: lots }',
      /'execute\.instructions' must be integer/,
    ],
    ['an unknown key', 'execute: { timeout: 5 }', /'execute\.timeout' is not a known setting/],
    [
      'a negative code cache',
      'execute: { code_cache_bytes: -1 }',
      /'execute\.code_cache_bytes' must be >= 0/,
    ],
    ['true', 'execute: true', /'execute' must be false or a table of settings/],
    [
      'a default above the ceiling',
      'execute: { timeout_ms: 5000, max_timeout_ms: 1000 }',
      /'execute\.timeout_ms' \(5000\) must not exceed 'execute\.max_timeout_ms' \(1000\)/,
    ],
  ];
  const dir = makeHubDir({ alpha: scopedPlugin('alpha') });
  for (const [what, text, re] of cases) {
    it(`refuses ${what} at startup, naming the key`, () => {
      const config = dir.write(
        `${what.replace(/\W+/g, '-')}.yaml`,
        `plugins: { dirs: [plugins] }\n${text}\n`,
      );
      const r = moonhubCli([
        'serve',
        '--port',
        '0',
        '--config',
        config,
        '--data',
        join(dir.root, 'd'),
      ]);
      assert.equal(r.status, 1, r.stderr);
      assert.match(r.stderr, re);
    });
  }
});
