/**
 * An `execute` script's inner calls are seen by the hub's observers like the client's own
 * requests (src/execute/inner-observe.ts): one audit line each (transport "execute", the
 * script's caller as principal, the arguments' size and hash), the metrics' call counters under
 * via="execute" (the client's series unchanged), whether the call went straight to the plugin's
 * worker (direct) or through the hub's thread (a rate-limited tool, a hidden one). A real hub in
 * token mode with an audit file, a real session and an SDK client.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
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
import { waitFor } from '../helpers/mcp-client.js';
import { adminToken, baseOf, sample, scrape } from '../helpers/operations.js';

const PLUGIN = `
mcp.tool("o.echo", {
  input_schema = { type = "object", properties = { text = { type = "string" } }, required = { "text" } },
}, function(p) return "o:" .. p.text end)
mcp.tool("o.fail", {}, function() error("o.fail always fails") end)
mcp.tool("o.limited", {}, function(p) return "limited:" .. tostring(p.n) end)
`;

const CONFIG = `
hub_id: observe
auth: { mode: token }
plugins: { dirs: [plugins] }
execute: { workers: 1 }
observe: { audit: { to: audit.jsonl } }
limits:
  rate:
    tools:
      'o.limited': { per_second: 100, burst: 100 }
agents:
  A: { plugins: [o, alpha], builtins: [execute] }
`;

interface AuditLine {
  transport: string;
  principal: string | null;
  agent: string | null;
  method: string;
  name: string | null;
  outcome: string;
  argument_bytes: number;
  argument_sha256: string | null;
  duration_ms: number;
  time: string;
}

const sha = (v: unknown) => createHash('sha256').update(JSON.stringify(v)).digest('hex');

describe('execute: inner calls seen by the audit log, the metrics and the dashboard', () => {
  let hub: MoonhubProcess;
  let dir: HubDir;
  let client: Client;
  let base: string;
  let admin: string;
  let auditFile: string;

  before(async () => {
    dir = makeHubDir({ o: PLUGIN, alpha: scopedPlugin('alpha'), beta: scopedPlugin('beta') });
    const config = dir.write('moonhub.yaml', CONFIG);
    auditFile = join(dir.root, 'audit.jsonl');
    hub = await startMoonhub(['--config', config, '--data', dir.data]);
    const session = createSession([
      ...['--config', config, '--data', dir.data, '--url', hub.url, '--agent', 'A'],
    ]);
    client = (await connectWithToken(hub.url, 'modern', session.token)).client;
    base = baseOf(hub.url);
    admin = adminToken(dir.data, ['--config', config]);
  });
  after(async () => {
    await client?.close();
    await hub?.stop();
  });

  const audit = (): AuditLine[] =>
    readFileSync(auditFile, 'utf8')
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as AuditLine);

  it('one audit line per inner call, direct or through the hub, for the caller', async () => {
    const from = audit().length;
    const r = await client.callTool({
      name: 'execute',
      arguments: {
        code: `
          local a = task.await(mcp.call("o.echo", { text = "x" }))
          local b = task.await(mcp.call("o.fail", {}))
          local c = task.await(mcp.call("o.limited", { n = 7 }))
          local d = task.await(mcp.call("beta.echo", {}))
          return { a.content, b.is_error, c.content, d.content }`,
      },
    });
    assert.equal(r.isError, undefined, JSON.stringify(r));
    assert.deepEqual((r.structuredContent as { result: unknown }).result, [
      'o:x',
      true,
      'limited:7',
      'Unknown tool: beta.echo',
    ]);
    // The direct calls are written just after the execute line: wait for the four inner ones.
    const innerLines = () =>
      audit()
        .slice(from)
        .filter((x) => x.transport === 'execute');
    await waitFor(() => innerLines().length >= 4, 5000, 'four inner-call audit lines');
    const lines = audit().slice(from);
    const outer = lines.find((l) => l.name === 'execute');
    assert.ok(outer, JSON.stringify(lines));
    assert.equal(outer.outcome, 'ok');
    const inner = new Map(lines.filter((l) => l.transport === 'execute').map((l) => [l.name, l]));
    assert.deepEqual([...inner.keys()].sort(), ['beta.echo', 'o.echo', 'o.fail', 'o.limited']);
    for (const l of inner.values()) {
      assert.equal(l.method, 'tools/call');
      // The script acts for its caller: same principal and agent as the execute line.
      assert.equal(l.principal, outer.principal);
      assert.equal(l.agent, 'A');
      assert.ok(l.duration_ms >= 0 && l.duration_ms <= outer.duration_ms + 1, JSON.stringify(l));
      assert.ok(Date.parse(l.time) >= Date.parse(outer.time) - 1, JSON.stringify([l, outer]));
    }
    assert.equal(inner.get('o.echo')!.outcome, 'ok');
    assert.equal(inner.get('o.echo')!.argument_sha256, sha({ text: 'x' }));
    assert.equal(inner.get('o.echo')!.argument_bytes, JSON.stringify({ text: 'x' }).length);
    assert.equal(inner.get('o.fail')!.outcome, 'tool_error');
    assert.equal(inner.get('o.limited')!.outcome, 'ok');
    assert.equal(inner.get('o.limited')!.argument_sha256, sha({ n: 7 }));
    // A hidden tool is audited as the unknown tool it is to this caller (its name as asked).
    assert.equal(inner.get('beta.echo')!.outcome, 'error');

    // The dashboard's recent calls list them too, for the agent, without argument values.
    const res = await fetch(`${base}/admin/dashboard/state`, {
      headers: { Authorization: `Bearer ${admin}` },
    });
    const state = (await res.json()) as {
      recent: { calls: { transport: string; name: string; agent: string; state: string }[] };
    };
    const shown = state.recent.calls.filter((c) => c.transport === 'execute');
    const echo = shown.find((c) => c.name === 'o.echo');
    assert.ok(echo, JSON.stringify(state.recent.calls));
    assert.equal(echo.agent, 'A');
    assert.equal(echo.state, 'ok');
    assert.ok(!JSON.stringify(state.recent).includes('"x"'), 'no argument values');
  });

  it('metrics count inner calls under via="execute", apart from the client\'s requests', async () => {
    const read = async () => {
      const text = await scrape(base, admin);
      const inner = (tool: string, outcome: string) =>
        sample(text, 'moonhub_mcp_calls_total', {
          method: 'tools/call',
          tool,
          outcome,
          via: 'execute',
        });
      return {
        echo: inner('o.echo', 'ok'),
        fail: inner('o.fail', 'tool_error'),
        limited: inner('o.limited', 'ok'),
        clientEcho: sample(text, 'moonhub_mcp_calls_total', {
          method: 'tools/call',
          tool: 'o.echo',
          outcome: 'ok',
          via: 'client',
        }),
        clientExecute: sample(text, 'moonhub_mcp_calls_total', {
          method: 'tools/call',
          tool: 'execute',
          outcome: 'ok',
          via: 'client',
        }),
        direct: sample(text, 'moonhub_execute_inner_calls_total', { path: 'direct' }),
      };
    };
    const before0 = await read();
    const r = await client.callTool({
      name: 'execute',
      arguments: {
        code: `
          local ids = {}
          for i = 1, 3 do ids[i] = mcp.call("o.echo", { text = tostring(i) }) end
          task.await(ids)
          task.await(mcp.call("o.fail", {}))
          return tools.use("o.limited", { n = 1 })`,
      },
    });
    assert.equal(r.isError, undefined, JSON.stringify(r));
    await client.callTool({ name: 'o.echo', arguments: { text: 'own' } });
    // Direct calls are replayed after the run's answer: read until the three echoes are in.
    let after0 = await read();
    for (const end = Date.now() + 5000; after0.echo - before0.echo < 3 && Date.now() < end;) {
      await new Promise((res) => setTimeout(res, 25));
      after0 = await read();
    }
    assert.equal(after0.echo - before0.echo, 3);
    assert.equal(after0.fail - before0.fail, 1);
    assert.equal(after0.limited - before0.limited, 1);
    // The echoes went straight to the plugin's worker, and still counted.
    assert.ok(after0.direct - before0.direct >= 4, JSON.stringify([before0, after0]));
    // The client's own requests are counted as before: one echo, one execute.
    assert.equal(after0.clientEcho - before0.clientEcho, 1);
    assert.equal(after0.clientExecute - before0.clientExecute, 1);
  });
});
