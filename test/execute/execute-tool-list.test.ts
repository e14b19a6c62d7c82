/**
 * A script's `mcp.listTools` is kept per view and registry version, and an execute worker keeps
 * the last list it got: with one worker serving two principals in turn, and a plugin changing
 * between runs, every run must still see exactly its caller's tools of the moment.
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Client } from '@modelcontextprotocol/client';
import { startMoonhub, type MoonhubProcess } from '../helpers/moonhub-process.js';
import {
  connectWithToken,
  createSession,
  makeHubDir,
  scopedPlugin,
  type HubDir,
  type Issued,
} from '../helpers/auth-hub.js';

const CONFIG = `
hub_id: listed
auth: { mode: token }
plugins: { dirs: [plugins] }
execute: { workers: 1 }
agents:
  A: { plugins: [alpha], builtins: [execute] }
  B: { plugins: [beta], builtins: [execute] }
`;

async function listed(client: Client): Promise<string[]> {
  const r = await client.callTool({
    name: 'execute',
    arguments: { code: 'return mcp.listTools()' },
  });
  assert.equal(r.isError, undefined, JSON.stringify(r));
  return (r.structuredContent as { result: string[] }).result;
}

describe('execute: the tool list a worker keeps', () => {
  let hub: MoonhubProcess;
  let dir: HubDir;
  const sessions: Record<'A' | 'B', Issued> = {} as never;

  before(async () => {
    dir = makeHubDir({ alpha: scopedPlugin('alpha'), beta: scopedPlugin('beta') });
    const config = dir.write('moonhub.yaml', CONFIG);
    hub = await startMoonhub(['--config', config, '--data', dir.data]);
    const common = ['--config', config, '--data', dir.data, '--url', hub.url];
    sessions.A = createSession([...common, '--agent', 'A']);
    sessions.B = createSession([...common, '--agent', 'B']);
  });
  after(async () => hub.stop());

  it('two principals in turn on one worker each see their own view', async () => {
    const a = await connectWithToken(hub.url, 'modern', sessions.A.token);
    const b = await connectWithToken(hub.url, 'legacy', sessions.B.token);
    try {
      for (let i = 0; i < 3; i++) {
        assert.deepEqual(await listed(a.client), ['alpha.echo']);
        assert.deepEqual(await listed(a.client), ['alpha.echo']);
        assert.deepEqual(await listed(b.client), ['beta.echo']);
      }
    } finally {
      await Promise.all([a.client.close(), b.client.close()]);
    }
  });

  it('a tool added or removed between runs shows in the next run', async () => {
    const { client } = await connectWithToken(hub.url, 'modern', sessions.A.token);
    const until = async (want: string[]) => {
      const deadline = Date.now() + 20_000;
      let seen = await listed(client);
      while (JSON.stringify(seen) !== JSON.stringify(want) && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 100));
        seen = await listed(client);
      }
      assert.deepEqual(seen, want);
    };
    try {
      assert.deepEqual(await listed(client), ['alpha.echo']);
      const extra = `mcp.tool("alpha.extra", { description = "one more" }, function() return 1 end)`;
      writeFileSync(join(dir.plugins, 'alpha.lua'), `${scopedPlugin('alpha')}\n${extra}\n`);
      await until(['alpha.echo', 'alpha.extra']);
      writeFileSync(join(dir.plugins, 'alpha.lua'), scopedPlugin('alpha'));
      await until(['alpha.echo']);
    } finally {
      await client.close();
    }
  });
});
