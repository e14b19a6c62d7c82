/**
 * Direct inner calls (src/execute/direct-calls.ts, src/plugins/direct-port.ts): an execute
 * script's calls to isolated Lua plugins' tools go from its worker straight to the plugin's
 * worker, with every decision still the hub's. On a real hub in token mode, with real sessions
 * and an SDK client: calls do go direct (the metrics say so); a tool outside the caller's view is
 * still unknown; a nested call made by a directly called handler acts for the caller; a handler
 * stuck in C is stopped hard within its limit plus grace and the plugin restarts, the run's next
 * call still answered; a Lua loop is stopped at its limit; the run's own timeout still ends it;
 * a plugin reloaded mid-run ends the call in flight clearly and the next call reaches the new code.
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
} from '../helpers/auth-hub.js';
import { adminToken, baseOf, sample, scrape } from '../helpers/operations.js';

const direct = (version: string) => `
mcp.tool("d.echo", {
  input_schema = { type = "object", properties = { text = { type = "string" } }, required = { "text" } },
}, function(p) return "${version}:" .. p.text end)
mcp.tool("d.slow", { timeout_ms = 20000 }, function(p)
  task.sleep(p.ms)
  return "${version}:slept"
end)
mcp.tool("d.loop", { timeout_ms = 300 }, function()
  while true do end
end)
mcp.tool("d.nested", {}, function(p, context)
  local content, err = mcp.call_tool(p.name, {}, context)
  return { content = content, err = err }
end)
`;

/** Apart from d: a hard stop restarts only these, and their longest limit is short (1.5 s). */
const STUCK = `
mcp.tool("s.stuck", { timeout_ms = 300 }, function()
  return ("a"):rep(200):find(".-.-.-.-.-b")
end)
mcp.tool("s.echo", { timeout_ms = 300 }, function(p) return "s:" .. p.text end)
mcp.tool("s.stuck_long", { timeout_ms = 1500 }, function()
  log.info("s.stuck_long entered")
  return ("a"):rep(200):find(".-.-.-.-.-b")
end)
`;

const CONFIG = `
hub_id: direct
auth: { mode: token }
plugins: { dirs: [plugins], hard_stop_grace_ms: 200 }
execute: { workers: 1 }
agents:
  A: { plugins: [d, s, alpha], builtins: [execute] }
`;

interface Structured {
  result?: unknown;
  output?: string;
  error?: string;
}

describe('execute: direct inner calls to plugin workers', () => {
  let hub: MoonhubProcess;
  let dir: HubDir;
  let client: Client;
  let base: string;
  let admin: string;
  let token: string;

  before(async () => {
    dir = makeHubDir({
      d: direct('v1'),
      s: STUCK,
      alpha: scopedPlugin('alpha'),
      beta: scopedPlugin('beta'),
    });
    const config = dir.write('moonhub.yaml', CONFIG);
    hub = await startMoonhub(['--config', config, '--data', dir.data]);
    const session = createSession([
      ...['--config', config, '--data', dir.data, '--url', hub.url, '--agent', 'A'],
    ]);
    token = session.token;
    client = (await connectWithToken(hub.url, 'modern', token)).client;
    base = baseOf(hub.url);
    admin = adminToken(dir.data, ['--config', config]);
  });
  after(async () => {
    await client?.close();
    await hub?.stop();
  });

  const execute = async (code: string, timeout_ms?: number) => {
    const args: Record<string, unknown> = { code };
    if (timeout_ms !== undefined) args.timeout_ms = timeout_ms;
    const t0 = performance.now();
    const r = await client.callTool({ name: 'execute', arguments: args });
    return { r, out: r.structuredContent as Structured, ms: performance.now() - t0 };
  };
  const inner = async () => {
    const text = await scrape(base, admin);
    return {
      direct: sample(text, 'moonhub_execute_inner_calls_total', { path: 'direct' }),
      hub: sample(text, 'moonhub_execute_inner_calls_total', { path: 'hub' }),
    };
  };

  it('calls in view go direct (counted); outside the view still unknown, via the hub', async () => {
    const before0 = await inner();
    const { r, out } = await execute(`
      local ids = {}
      for i, t in ipairs({ "a", "b", "c" }) do ids[i] = mcp.call("d.echo", { text = t }) end
      local got = {}
      for i, x in ipairs(task.await(ids)) do got[i] = x.content end
      local bad = task.await(mcp.call("d.echo", {}))
      local hidden = task.await(mcp.call("beta.echo", {}))
      return { got = got, bad = bad, hidden = hidden }`);
    assert.equal(r.isError, undefined, JSON.stringify(r));
    const res = out.result as Record<string, Record<string, unknown>>;
    assert.deepEqual(res.got, ['v1:a', 'v1:b', 'v1:c']);
    // Arguments are still checked against the schema (in the plugin's worker, the same check).
    assert.equal(res.bad!.is_error, true);
    assert.match(String(res.bad!.content), /Invalid arguments for tool 'd\.echo'/);
    assert.equal(res.hidden!.is_error, true);
    assert.equal(res.hidden!.content, 'Unknown tool: beta.echo');
    const after0 = await inner();
    assert.equal(after0.direct - before0.direct, 4);
    assert.equal(after0.hub - before0.hub, 1);
  });

  it("a directly called handler's nested calls act for the caller's view", async () => {
    const { out } = await execute(`
      local seen = tools.use("d.nested", { name = "alpha.echo" })
      local hidden = tools.use("d.nested", { name = "beta.echo" })
      return { seen = seen, hidden = hidden }`);
    // tools.use decodes the answer: alpha.echo's structured result, as the nested call got it.
    const res = out.result as Record<string, Record<string, unknown>>;
    assert.equal(res.seen!.plugin, 'alpha', JSON.stringify(out));
    assert.equal(res.seen!.agent_name, 'A');
    assert.equal(res.hidden!.err, 'Unknown tool: beta.echo');
  });

  it('a handler stuck in C is stopped hard within limit + grace; the next call answers', async () => {
    const from = hub.log().length;
    const { r, out } = await execute(`
      local stuck = task.await(mcp.call("s.stuck", {}))
      local after = task.await(mcp.call("s.echo", { text = "again" }))
      return { stuck = stuck, after = after }`);
    assert.equal(r.isError, undefined, JSON.stringify(r));
    const res = out.result as Record<string, { is_error: boolean; content: string }>;
    assert.equal(res.stuck!.is_error, true);
    assert.match(
      res.stuck!.content,
      /^timeout: the handler of tool 's\.stuck' ran longer than its 300 ms limit and was stopped hard/,
    );
    // The restarted plugin answers the run's next call (through the hub: the channel is dead).
    assert.equal(res.after!.is_error, false, JSON.stringify(res.after));
    assert.equal(res.after!.content, 's:again');
    await hub.waitForLog(/plugin restarted: the handler of tool 's\.stuck' overran/, from, 10_000);
  });

  it('the hard stop comes within the limit plus grace', async () => {
    const { r, ms } = await execute(`return task.await(mcp.call("s.stuck", {})).content`);
    assert.match(String((r.structuredContent as Structured).result), /^timeout: /);
    // 300 ms + 200 ms grace; generous for a loaded machine, far below a run's 30 s.
    assert.ok(ms >= 450 && ms < 5_000, `answered after ${ms} ms`);
  });

  it('a script stopped while its direct call is stuck: the hub still stops the plugin', async () => {
    // The plugin is serving again after the earlier hard stops (a loading one gets no channel).
    assert.equal((await execute(`return tools.use("s.echo", { text = "w" })`)).out.result, 's:w');
    const from = hub.log().length;
    const ctl = new AbortController();
    // A 2025 session: the client's cancellation reaches the hub as notifications/cancelled.
    const legacy = (await connectWithToken(hub.url, 'legacy', token)).client;
    const call = legacy.callTool(
      { name: 'execute', arguments: { code: 'return tools.use("s.stuck_long", {})' } },
      { signal: ctl.signal },
    );
    // Once the call is stuck in the plugin, and before the script's own watchdog (1500 + 200
    // ms): the script's worker is terminated; the hub watches the channel's counts from then on.
    await hub.waitForLog(/s\.stuck_long entered/, from, 10_000);
    ctl.abort();
    await assert.rejects(call);
    await legacy.close();
    await hub.waitForLog(
      /plugin restarted: the handler of tool '\(left running by a stopped script\)' overran its 1700 ms limit/,
      from,
      10_000,
    );
    const next = await execute(`return tools.use("s.echo", { text = "z" })`);
    assert.equal(next.out.result, 's:z');
  });

  it('a Lua loop is stopped at its limit; the run timeout still ends a run', async () => {
    const loop = await execute(`return task.await(mcp.call("d.loop", {}))`);
    const res = (loop.out.result ?? {}) as { is_error?: boolean; content?: string };
    assert.equal(res.is_error, true, JSON.stringify(loop.r));
    assert.match(String(res.content), /timeout/);
    assert.ok(loop.ms < 5_000, `answered after ${loop.ms} ms`);
    const slow = await execute(`return task.await(mcp.call("d.slow", { ms = 5000 }))`, 400);
    assert.equal(slow.r.isError, true);
    assert.match(String(slow.out.error), /timeout/);
    assert.ok(slow.ms >= 390 && slow.ms < 3_000, `answered after ${slow.ms} ms`);
    const next = await execute(`return tools.use("d.echo", { text = "x" })`);
    assert.equal((next.out as Structured).result, 'v1:x');
  });

  it('a reload mid-run: the call in flight ends clearly, the next reaches the new code', async () => {
    const from = hub.log().length;
    // The first call outlasts the reload (the watcher's delay and the new worker's load).
    const running = execute(`
      local first = task.await(mcp.call("d.slow", { ms = 8000 }))
      local second = task.await(mcp.call("d.echo", { text = "b" }))
      return { first = first.content, second = second.content, err = second.is_error }`);
    await new Promise((res) => setTimeout(res, 300));
    writeFileSync(join(dir.plugins, 'd.lua'), direct('v2'));
    await hub.waitForLog(/plugin reloaded/, from, 10_000);
    const { r, out } = await running;
    assert.equal(r.isError, undefined, JSON.stringify(r));
    const res = out.result as { first: string; second: string; err: boolean };
    // The retired worker is ended 2 s after the reload (plugins' close wait): a direct call
    // still running there fails with a clear error, never hangs on a dead port.
    assert.match(
      res.first,
      /^(v1:slept|the plugin of tool 'd\.slow' was restarted or unloaded while the call ran)$/,
    );
    assert.equal(res.second, 'v2:b');
    assert.equal(res.err, false);
  });
});
