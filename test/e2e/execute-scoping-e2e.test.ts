/**
 * Code mode through real scoped sessions: a hub in token mode, sessions made by the real CLI,
 * SDK clients holding their tokens. An `execute` script's inner calls (`mcp.call`, `tools.use`,
 * `mcp.listTools`) and `search_tools` see exactly the caller's view; a hidden tool is refused
 * like an unknown one; two sessions running scripts at once do not bleed into each other; and
 * `notice` reaches the client as progress and log messages in both protocol eras.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Client } from '@modelcontextprotocol/client';
import type { Era } from '../helpers/mcp-client.js';
import { startMoonhub, type MoonhubProcess } from '../helpers/moonhub-process.js';
import {
  connectWithToken,
  createSession,
  makeHubDir,
  scopedPlugin,
  type Issued,
} from '../helpers/auth-hub.js';

const CONFIG = `
hub_id: coded
auth: { mode: token }
plugins: { dirs: [plugins] }
agents:
  A: { plugins: [alpha], builtins: [execute, search_tools] }
  B: { plugins: [beta], builtins: [execute, search_tools] }
`;

interface Structured {
  result?: unknown;
  output?: string;
  error?: string;
}

async function execute(client: Client, code: string): Promise<Structured> {
  const r = await client.callTool({ name: 'execute', arguments: { code } });
  assert.equal(r.isError, undefined, JSON.stringify(r));
  return r.structuredContent as Structured;
}

describe('execute and search_tools through scoped sessions', () => {
  let hub: MoonhubProcess;
  const sessions: Record<'A' | 'B', Issued> = {} as never;

  before(async () => {
    const dir = makeHubDir({ alpha: scopedPlugin('alpha'), beta: scopedPlugin('beta') });
    const config = dir.write('moonhub.yaml', CONFIG);
    hub = await startMoonhub(['--config', config, '--data', dir.data]);
    const common = ['--config', config, '--data', dir.data, '--url', hub.url];
    sessions.A = createSession([...common, '--agent', 'A']);
    sessions.B = createSession([...common, '--agent', 'B']);
  });
  after(async () => hub.stop());

  it("mcp.listTools, mcp.call and tools.use see the caller's view; hidden = unknown", async () => {
    const { client } = await connectWithToken(hub.url, 'modern', sessions.A.token);
    try {
      const out = await execute(
        client,
        `
        local hidden = task.await(mcp.call("beta.echo", {}))
        local missing = task.await(mcp.call("zzzzz.echo", {}))
        local hiddenBuiltin = task.await(mcp.call("hub_status", {}))
        local ok1, use_hidden = pcall(tools.use, "beta.echo", {})
        local ok2, use_missing = pcall(tools.use, "zzzzz.echo", {})
        local seen = tools.use("alpha.echo", {})
        return {
          list = mcp.listTools(),
          hidden = hidden, missing = missing, hidden_builtin = hiddenBuiltin,
          use_hidden = use_hidden, use_missing = use_missing, ok = ok1 or ok2,
          seen = seen,
        }`,
      );
      const r = out.result as Record<string, Record<string, unknown> & { content: string }>;
      // execute hides itself from scripts; beta and hub_status are outside A's view.
      assert.deepEqual(r.list, ['alpha.echo', 'search_tools']);
      assert.equal(r.hidden!.is_error, true);
      assert.equal(r.hidden!.content, 'Unknown tool: beta.echo');
      assert.equal(r.hidden!.content, r.missing!.content.replace('zzzzz.echo', 'beta.echo'));
      assert.equal(r.hidden_builtin!.content, 'Unknown tool: hub_status');
      assert.equal(r.ok as unknown, false);
      assert.equal(String(r.use_hidden), String(r.use_missing).replace('zzzzz.echo', 'beta.echo'));
      assert.match(String(r.use_hidden), /Unknown tool: beta\.echo/);
      // An inner call carries the caller's identity.
      assert.equal(r.seen!.session_uuid, sessions.A.session_uuid);
      assert.equal(r.seen!.agent_name, 'A');
    } finally {
      await client.close();
    }
  });

  it("search_tools, called directly or from a script, finds only the caller's tools", async () => {
    const a = await connectWithToken(hub.url, 'legacy', sessions.A.token);
    const b = await connectWithToken(hub.url, 'modern', sessions.B.token);
    try {
      const names = (r: unknown) =>
        (r as { tools: { name: string }[] }).tools.map((t) => t.name).sort();
      const direct = await a.client.callTool({
        name: 'search_tools',
        arguments: { query: 'echo' },
      });
      assert.deepEqual(names(direct.structuredContent), ['alpha.echo']);
      const all = await a.client.callTool({ name: 'search_tools', arguments: { query: '' } });
      assert.doesNotMatch(JSON.stringify(all), /beta|hub_status/);
      const fromScript = await execute(
        b.client,
        'return tools.use("search_tools", { query = "echo" })',
      );
      assert.deepEqual(names(fromScript.result), ['beta.echo']);
      assert.doesNotMatch(JSON.stringify(fromScript), /alpha/);
    } finally {
      await Promise.all([a.client.close(), b.client.close()]);
    }
  });

  it('two sessions running scripts at once do not bleed into each other', async () => {
    const a = await connectWithToken(hub.url, 'modern', sessions.A.token);
    const b = await connectWithToken(hub.url, 'legacy', sessions.B.token);
    // Each script interleaves its calls with sleeps so both runs are in flight together.
    const script = (own: string, other: string) => `
      local ids, refused = {}, 0
      for i = 1, 12 do
        ids[#ids + 1] = mcp.call("${own}.echo", {})
        if i % 3 == 0 then task.sleep(5) end
        if task.await(mcp.call("${other}.echo", {})).is_error then refused = refused + 1 end
      end
      local who = {}
      for _, r in ipairs(task.await(ids)) do
        local v = json.decode(r.content)
        who[v.plugin .. "/" .. v.session_uuid] = true
      end
      local keys = {}
      for k in pairs(who) do keys[#keys + 1] = k end
      return { who = keys, refused = refused, list = mcp.listTools() }`;
    try {
      const runs = await Promise.all(
        [0, 1, 2].flatMap(() => [
          execute(a.client, script('alpha', 'beta')),
          execute(b.client, script('beta', 'alpha')),
        ]),
      );
      runs.forEach((run, i) => {
        const [own, session] = i % 2 === 0 ? ['alpha', sessions.A] : ['beta', sessions.B];
        assert.deepEqual(run.result, {
          who: [`${own}/${session.session_uuid}`],
          refused: 12,
          list: [`${own}.echo`, 'search_tools'],
        });
      });
    } finally {
      await Promise.all([a.client.close(), b.client.close()]);
    }
  });

  for (const era of ['legacy', 'modern'] as Era[]) {
    it(`notice reaches the client as progress and log messages (${era})`, async () => {
      const { client } = await connectWithToken(hub.url, era, sessions.A.token);
      const logs: unknown[] = [];
      client.setNotificationHandler('notifications/message', (n) => {
        logs.push(n.params);
      });
      try {
        if (era === 'legacy') await client.setLoggingLevel('info');
        const progress: { progress: number; message?: string }[] = [];
        const r = await client.callTool(
          {
            name: 'execute',
            arguments: { code: 'notice("step one"); notice("step two", { n = 2 }); return 7' },
            ...(era === 'modern' ? { _meta: { 'io.modelcontextprotocol/logLevel': 'info' } } : {}),
          },
          { onprogress: (p) => progress.push(p) },
        );
        assert.equal((r.structuredContent as Structured).result, 7);
        assert.deepEqual(
          progress.map((p) => [p.progress, p.message]),
          [
            [1, 'step one'],
            [2, 'step two'],
          ],
        );
        assert.deepEqual(logs, [
          {
            level: 'info',
            logger: 'execute',
            data: { text: 'step one', params: null, images: [] },
          },
          {
            level: 'info',
            logger: 'execute',
            data: { text: 'step two', params: { n: 2 }, images: [] },
          },
        ]);
      } finally {
        await client.close();
      }
    });
  }
});
