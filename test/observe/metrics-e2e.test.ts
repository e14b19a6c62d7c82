/**
 * /metrics, /healthz, /readyz and the audit log of a real hub: known calls (ok, a Lua error, an
 * unknown tool, a proxied call to another real moonhub, the same after that upstream died, a
 * body over the size limit) move exactly the counters and histograms they should; /metrics
 * needs an admin token; labels carry no session ids; readiness follows the required upstream.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/client';
import { connectHttpClient, waitFor } from '../helpers/mcp-client.js';
import { startMoonhub, type MoonhubProcess } from '../helpers/moonhub-process.js';
import { makeHubDir, type HubDir } from '../helpers/auth-hub.js';
import { adminToken, baseOf, sample, scrape } from '../helpers/operations.js';
import { openListen } from '../helpers/listen-raw.js';

const CALC = `
mcp.tool("calc.echo", { input_schema = { type = "object", properties = { text = { type = "string" } } } },
  function(params) return { echoed = params.text } end)
mcp.tool("calc.fail", {}, function() error("boom on purpose") end)
`;

const calls = 'moonhub_mcp_calls_total';

describe('metrics, health and audit of a running hub', () => {
  let upstream: MoonhubProcess;
  let hub: MoonhubProcess;
  let dir: HubDir;
  let client: Client;
  let token: string;
  let base: string;
  let before0: string;
  let audit: string;

  before(async () => {
    const upDir = makeHubDir({ greeter: `mcp.tool("greet", {}, function() return "hello" end)` });
    upstream = await startMoonhub(['--plugins', upDir.plugins, '--no-watch']);
    dir = makeHubDir({
      calc: CALC,
      up: `assert(mcp.proxy(${JSON.stringify(upstream.url)}, { prefix = "u." }))`,
    });
    audit = join(dir.root, 'audit.log');
    const config = dir.write(
      'moonhub.json',
      JSON.stringify({
        observe: { health: { required_upstreams: ['up'] }, audit: { to: 'audit.log' } },
      }),
    );
    hub = await startMoonhub([
      '--config',
      config,
      '--plugins',
      dir.plugins,
      '--data',
      dir.data,
      '--no-watch',
    ]);
    base = baseOf(hub.url);
    token = adminToken(dir.data);
    ({ client } = await connectHttpClient(hub.url, 'modern'));
    before0 = await scrape(base, token);
  });

  after(async () => {
    await client?.close();
    await hub?.stop();
    await upstream?.stop();
  });

  it('/metrics refuses a missing or wrong token with 401 and counts the refusal', async () => {
    const none = await fetch(`${base}/metrics`);
    assert.equal(none.status, 401);
    assert.match(none.headers.get('www-authenticate') ?? '', /Bearer/);
    const wrong = await fetch(`${base}/metrics`, { headers: { Authorization: 'Bearer mhs_x.y' } });
    assert.equal(wrong.status, 401);
    const text = await scrape(base, token);
    assert.ok(sample(text, 'moonhub_limit_refusals_total', { limit: 'authentication' }) >= 2);
  });

  it('/healthz and /readyz answer without a token, cheaply', async () => {
    const h = await fetch(`${base}/healthz`);
    assert.equal(h.status, 200);
    assert.deepEqual(await h.json(), { status: 'ok' });
    const r = await fetch(`${base}/readyz`);
    assert.equal(r.status, 200);
    const body = (await r.json()) as { ready: boolean; plugins: { loaded: number } };
    assert.equal(body.ready, true);
    assert.equal(body.plugins.loaded, 2);
  });

  it('counts calls by method, tool, plugin and outcome, with latency histograms', async () => {
    for (let i = 0; i < 3; i++)
      await client.callTool({ name: 'calc.echo', arguments: { text: 'hi' } });
    const failed = await client.callTool({ name: 'calc.fail', arguments: {} });
    assert.equal(failed.isError, true);
    await assert.rejects(client.callTool({ name: 'no.such.tool', arguments: {} }));
    const ran = await client.callTool({
      name: 'execute',
      arguments: { code: 'return mcp.call("calc.echo", { text = "x" }).content' },
    });
    assert.notEqual(ran.isError, true, JSON.stringify(ran));
    const greeted = await client.callTool({ name: 'u.greet', arguments: {} });
    assert.notEqual(greeted.isError, true);
    // A body over the 4 MiB limit is refused before it reaches the dispatcher.
    const big = await fetch(hub.url, {
      method: 'POST',
      headers: {
        'Content-Type': 'application/json',
        Accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify({ pad: 'x'.repeat(5 * 1024 * 1024) }),
    });
    assert.equal(big.status, 413);

    const text = await scrape(base, token);
    const delta = (name: string, labels: Record<string, string>) =>
      sample(text, name, labels) - sample(before0, name, labels);
    // The client's own requests; an execute script's inner calls count under via="execute".
    const tc = { method: 'tools/call', via: 'client' };
    assert.equal(delta(calls, { ...tc, tool: 'calc.echo', plugin: 'calc', outcome: 'ok' }), 3);
    assert.equal(
      delta(calls, { ...tc, tool: 'execute', plugin: 'builtin:execute', outcome: 'ok' }),
      1,
    );
    assert.ok(sample(text, 'moonhub_execute_scripts', { state: 'workers' }) >= 1);
    assert.equal(sample(text, 'moonhub_execute_scripts', { state: 'queued' }), 0);
    assert.equal(
      delta(calls, { ...tc, tool: 'calc.fail', plugin: 'calc', outcome: 'tool_error' }),
      1,
    );
    assert.equal(delta(calls, { ...tc, tool: 'unknown', outcome: 'error' }), 1);
    assert.equal(delta(calls, { ...tc, tool: 'u.greet', plugin: 'up', outcome: 'ok' }), 1);
    const hist = 'moonhub_mcp_call_duration_seconds';
    assert.equal(delta(`${hist}_count`, { ...tc, plugin: 'calc', outcome: 'ok' }), 3);
    assert.ok(delta(`${hist}_sum`, { ...tc, plugin: 'calc', outcome: 'ok' }) > 0);
    assert.equal(delta(`${hist}_bucket`, { ...tc, plugin: 'calc', outcome: 'ok', le: '+Inf' }), 3);
    assert.equal(sample(text, 'moonhub_mcp_calls_in_flight', tc), 0);
    assert.equal(delta('moonhub_limit_refusals_total', { limit: 'body_size' }), 1);
    assert.equal(delta('moonhub_upstream_calls_total', { outcome: 'ok' }), 1);
    assert.equal(delta('moonhub_upstream_call_duration_seconds_count', {}), 1);
    assert.equal(sample(text, 'moonhub_upstream_up', { plugin: 'up' }), 1);
    assert.equal(sample(text, 'moonhub_plugin_up', { plugin: 'calc' }), 1);
    assert.ok(sample(text, 'moonhub_plugin_lua_memory_bytes', { plugin: 'calc' }) > 0);
    assert.equal(
      sample(text, 'moonhub_plugin_loads_total', { plugin: 'calc', outcome: 'loaded' }),
      1,
    );
    assert.ok(sample(text, 'moonhub_process_resident_memory_bytes') > 0);
    // Bounded labels: no arguments, no principals or session ids.
    assert.doesNotMatch(text, /hi"|session:|[0-9a-f]{32}/);
  });

  it('counts open subscriptions/listen streams as modern-era streams, and their end', async () => {
    const streams = async () =>
      sample(await scrape(base, token), 'moonhub_streams', { era: 'modern' });
    const before1 = await streams();
    const listen = await openListen(hub.url, 'metrics-listen', { toolsListChanged: true });
    assert.equal(listen.res.headers.get('content-type'), 'text/event-stream');
    await listen.readOnce();
    assert.equal(await streams(), before1 + 1);
    await listen.close();
    let now = -1;
    for (let i = 0; i < 50 && now !== before1; i++) {
      now = await streams();
      if (now !== before1) await new Promise((r) => setTimeout(r, 100));
    }
    assert.equal(now, before1, 'the ended listen stream is no longer counted');
  });

  it('an upstream failure shows as an error of the upstream call and fails readiness', async () => {
    const before1 = await scrape(base, token);
    await upstream.stop();
    const r = await client.callTool({ name: 'u.greet', arguments: {} });
    assert.equal(r.isError, true);
    const text = await scrape(base, token);
    const delta = (name: string, labels: Record<string, string>) =>
      sample(text, name, labels) - sample(before1, name, labels);
    assert.equal(delta('moonhub_upstream_calls_total', { outcome: 'error' }), 1);
    assert.equal(delta(calls, { tool: 'u.greet', outcome: 'tool_error' }), 1);
    let status = 0;
    const deadline = Date.now() + 20_000;
    while (Date.now() < deadline) {
      status = (await fetch(`${base}/readyz`)).status;
      if (status === 503) break;
      await new Promise((res) => setTimeout(res, 200));
    }
    assert.equal(status, 503, '/readyz fails while a required upstream is down');
    assert.equal((await fetch(`${base}/healthz`)).status, 200);
  });

  it('writes one audit line per call, with argument size and hash but no values', async () => {
    await waitFor(() => readFileSync(audit, 'utf8').includes('u.greet'), 5000, 'audit lines');
    const lines = readFileSync(audit, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    // The client's own calls (the execute script's inner call has transport "execute").
    const echoes = lines.filter((l) => l.name === 'calc.echo' && l.transport === 'http');
    assert.equal(echoes.length, 3);
    const args = JSON.stringify({ text: 'hi' });
    assert.deepEqual(
      { ...echoes[0], time: undefined, duration_ms: undefined },
      {
        type: 'audit',
        time: undefined,
        transport: 'http',
        principal: null,
        agent: null,
        target: null,
        session: null,
        method: 'tools/call',
        name: 'calc.echo',
        argument_bytes: Buffer.byteLength(args),
        argument_sha256: createHash('sha256').update(args).digest('hex'),
        outcome: 'ok',
        duration_ms: undefined,
      },
    );
    assert.ok(!readFileSync(audit, 'utf8').includes('"hi"'), 'no argument values');
    const greets = lines.filter((l) => l.name === 'u.greet');
    assert.deepEqual(
      greets.map((g) => [g.outcome, g.upstream]),
      [
        ['ok', upstream.url],
        ['tool_error', upstream.url],
      ],
    );
    const unknown = lines.find((l) => l.name === 'no.such.tool');
    assert.equal(unknown?.outcome, 'error');
    assert.equal(typeof unknown?.error_code, 'number');
  });
});
