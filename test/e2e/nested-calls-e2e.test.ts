/**
 * A tool called from a plugin handler's Lua (`mcp.call`, `tools.use`, `mcp.call_tool`, also from
 * a spawned task) acts for the handler's caller: it reaches the caller's MCP client (progress,
 * log, elicit), and it sees the caller's view whatever context table the code passes, so plugin
 * code cannot widen a session's view by naming another session. A real hub in token mode, SDK
 * clients in both protocol eras.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Era } from '../helpers/mcp-client.js';
import { startMoonhub, type MoonhubProcess } from '../helpers/moonhub-process.js';
import {
  connectWithToken,
  createSession,
  makeHubDir,
  scopedPlugin,
  type Issued,
} from '../helpers/auth-hub.js';

const NEST = String.raw`
mcp.tool("nest.inner", {
  input_schema = { type = "object", properties = { ask = { type = "boolean" } } },
}, function(params, context)
  context.progress(1, 3, "inner")
  context.log("info", { from = "inner" })
  notice("inner notice", { n = 1 })
  local answer
  if params.ask then
    local r = context.elicit({ message = "Your name?", key = "name",
      requested_schema = { type = "object", properties = { name = { type = "string" } } } })
    answer = r.content and r.content.name
  end
  return { session_uuid = context.session_uuid, agent_name = context.agent_name,
           plugin = context.plugin, answer = answer }
end)

mcp.tool("nest.outer", {
  input_schema = { type = "object", properties = { how = { type = "string" }, ask = { type = "boolean" } } },
}, function(params, context)
  local args = { ask = params.ask }
  local r
  if params.how == "call_tool" then
    local content, err = mcp.call_tool("nest.inner", args, context)
    if not content then error(err, 0) end
    r = json.decode(content[1].text)
  elseif params.how == "spawn" then
    local id = task.spawn(function() return tools.use("nest.inner", args) end)
    r = task.await(id).value
  elseif params.how == "use" then
    r = tools.use("nest.inner", args)
  else
    local done = task.await(mcp.call("nest.inner", args))
    if done.is_error then error(done.content, 0) end
    r = json.decode(done.content)
  end
  context.progress(3, 3, "outer")
  return r
end)

mcp.tool("nest.widen", {
  input_schema = { type = "object", properties = { session = { type = "string" } } },
}, function(params, context)
  local forged = { session_uuid = params.session, principal = "session:" .. params.session,
                   agent_name = "C" }
  local content, err = mcp.call_tool("alpha.echo", {}, forged)
  local via_call = task.await(mcp.call("alpha.echo", {}))
  local who = mcp.call_tool("nest.who", {}, forged)
  return { call_tool = err or content[1].text, call = via_call.content,
           list = mcp.listTools(), who = json.decode(who[1].text) }
end)

mcp.tool("nest.who", {}, function(_, context)
  return { session_uuid = context.session_uuid, principal = context.principal }
end)
`;

const CONFIG = `
auth: { mode: token }
plugins: { dirs: [plugins] }
agents:
  A: { plugins: [nest, beta], builtins: [execute] }
  C: {}
`;

type Progress = { progress: number; message?: string };

describe('nested calls keep the client and the view', () => {
  let hub: MoonhubProcess;
  const sessions: Record<'A' | 'C', Issued> = {} as never;

  before(async () => {
    const dir = makeHubDir({
      nest: NEST,
      alpha: scopedPlugin('alpha'),
      beta: scopedPlugin('beta'),
    });
    const config = dir.write('moonhub.yaml', CONFIG);
    hub = await startMoonhub(['--config', config, '--data', dir.data, '--no-watch']);
    const common = ['--config', config, '--data', dir.data, '--url', hub.url];
    sessions.A = createSession([...common, '--agent', 'A']);
    sessions.C = createSession([...common, '--agent', 'C']);
  });
  after(async () => hub.stop());

  async function client(era: Era, token: string) {
    const c = await connectWithToken(hub.url, era, token);
    const logs: unknown[] = [];
    c.client.setNotificationHandler('notifications/message', (n) => {
      logs.push(n.params);
    });
    if (era === 'legacy') await c.client.setLoggingLevel('info');
    return { client: c.client, logs };
  }

  const meta = (era: Era) =>
    era === 'modern' ? { _meta: { 'io.modelcontextprotocol/logLevel': 'info' } } : {};

  for (const era of ['legacy', 'modern'] as Era[]) {
    for (const how of ['call', 'use', 'call_tool', 'spawn']) {
      it(`a tool reached by ${how} from a handler talks to the client (${era})`, async () => {
        const { client: c, logs } = await client(era, sessions.A.token);
        try {
          const progress: Progress[] = [];
          const r = await c.callTool(
            { name: 'nest.outer', arguments: { how }, ...meta(era) },
            { onprogress: (p) => progress.push(p) },
          );
          assert.equal(r.isError, undefined, JSON.stringify(r));
          assert.deepEqual(r.structuredContent, {
            session_uuid: sessions.A.session_uuid,
            agent_name: 'A',
            plugin: 'nest',
          });
          assert.deepEqual(
            progress.map((p) => [p.progress, p.message]),
            [
              [1, 'inner'],
              [3, 'outer'],
            ],
          );
          assert.deepEqual(logs, [
            { level: 'info', data: { from: 'inner' } },
            {
              level: 'info',
              logger: 'nest',
              data: { text: 'inner notice', params: { n: 1 }, images: [] },
            },
          ]);
        } finally {
          await c.close();
        }
      });
    }

    it(`a nested tool can ask the client (elicit) (${era})`, async () => {
      const c = await connectWithToken(hub.url, era, sessions.A.token, {
        elicitation: {},
      });
      c.client.setRequestHandler(
        'elicitation/create',
        async () => ({ action: 'accept', content: { name: 'Ada' } }) as never,
      );
      try {
        for (const how of ['call', 'call_tool']) {
          const r = await c.client.callTool({ name: 'nest.outer', arguments: { how, ask: true } });
          assert.equal(r.isError, undefined, JSON.stringify(r));
          assert.equal((r.structuredContent as { answer: string }).answer, 'Ada', how);
        }
      } finally {
        await c.client.close();
      }
    });
  }

  it('a forged context table does not widen the caller view', async () => {
    const a = await connectWithToken(hub.url, 'modern', sessions.A.token);
    const c = await connectWithToken(hub.url, 'legacy', sessions.C.token);
    try {
      const args = { session: sessions.C.session_uuid };
      const ofA = await a.client.callTool({ name: 'nest.widen', arguments: args });
      assert.deepEqual(ofA.structuredContent, {
        call_tool: 'Unknown tool: alpha.echo',
        call: 'Unknown tool: alpha.echo',
        list: ['beta.echo', 'nest.inner', 'nest.outer', 'nest.who', 'nest.widen', 'execute'].sort(),
        who: {
          session_uuid: sessions.A.session_uuid,
          principal: `session:${sessions.A.session_uuid}`,
        },
      });
      // Through execute too: the script's caller is A whatever the plugin passes on.
      const viaScript = await a.client.callTool({
        name: 'execute',
        arguments: {
          code: `return tools.use("nest.widen", { session = "${sessions.C.session_uuid}" })`,
        },
      });
      const result = (viaScript.structuredContent as { result: Record<string, unknown> }).result;
      assert.equal(result.call_tool, 'Unknown tool: alpha.echo');
      assert.equal(result.call, 'Unknown tool: alpha.echo');
      assert.ok(!(result.list as string[]).includes('execute'), 'execute stays hidden from it');
      // C, who sees alpha, gets it through the same code.
      const ofC = await c.client.callTool({ name: 'nest.widen', arguments: args });
      assert.match(String((ofC.structuredContent as { call_tool: string }).call_tool), /alpha/);
      assert.match(String((ofC.structuredContent as { call: string }).call), /"plugin":"alpha"/);
    } finally {
      await Promise.all([a.client.close(), c.client.close()]);
    }
  });
});
