/**
 * The operator's HTTP API with bad input, and its bounds: the dashboard data refused without an
 * admin token (and to an agent's token), a bad reload body, an unknown plugin, the live-stream
 * bound, a foreign Origin; a plugin fixed on disk and reloaded through the API; metrics on their
 * own address without a token (and none on the MCP port); an unknown `observe` key refused by
 * name. The hub keeps serving MCP throughout.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { BIN, startMoonhub, type MoonhubProcess } from '../helpers/moonhub-process.js';
import { createSession, makeHubDir, rawPost, type HubDir } from '../helpers/auth-hub.js';
import { adminToken, baseOf, sample } from '../helpers/operations.js';

const GOOD = `mcp.tool("fixme.ok", {}, function() return "fixed" end)`;

describe('the operator API refuses bad input and keeps its bounds', () => {
  let hub: MoonhubProcess;
  let dir: HubDir;
  let admin: string;
  let base: string;
  const auth = () => ({ Authorization: `Bearer ${admin}` });

  before(async () => {
    dir = makeHubDir({ fixme: 'mcp.tool("fixme.ok", {}, function() return 1 end) local = 3' });
    const config = dir.write(
      'moonhub.json',
      JSON.stringify({
        agents: { bot: {} },
        observe: { dashboard: { max_streams: 1 }, metrics: { listen: { port: 0 } } },
      }),
    );
    hub = await startMoonhub(['--config', config, '--plugins', dir.plugins, '--data', dir.data]);
    base = baseOf(hub.url);
    admin = adminToken(dir.data, ['--config', config]);
  });

  after(async () => {
    await hub?.stop();
  });

  it('refuses the dashboard data without an admin token, or with an agent token', async () => {
    const none = await fetch(`${base}/admin/dashboard/state`);
    assert.equal(none.status, 401);
    assert.match(none.headers.get('www-authenticate') ?? '', /realm="moonhub-admin"/);
    const agent = createSession([
      '--data',
      dir.data,
      '--agent',
      'bot',
      '--config',
      join(dir.root, 'moonhub.json'),
    ]);
    const asAgent = await fetch(`${base}/admin/dashboard/state`, {
      headers: { Authorization: `Bearer ${agent.token}` },
    });
    assert.equal(asAgent.status, 401);
    const foreign = await fetch(`${base}/admin/dashboard/state`, {
      headers: { ...auth(), Origin: 'https://evil.example' },
    });
    assert.equal(foreign.status, 403);
    const ok = await fetch(`${base}/admin/dashboard/state`, { headers: auth() });
    assert.equal(ok.status, 200);
    const state = (await ok.json()) as { plugins: { name: string; error: { line: number } }[] };
    assert.equal(state.plugins[0]!.error.line, 1);
    assert.doesNotMatch(JSON.stringify(state), /mhs_/, 'no token in the state');
  });

  it('answers 404 for dashboard asset names that are Object.prototype keys', async () => {
    // Such a name used to pass the asset allow-list (a plain object), reach readFileSync and
    // answer 500 with an error line in the log, for any unauthenticated caller.
    const from = hub.log().length;
    for (const name of ['constructor', 'toString', '__proto__', 'hasOwnProperty']) {
      const r = await fetch(`${base}/dashboard/assets/${name}`);
      assert.equal(r.status, 404, name);
      await r.text();
    }
    assert.equal((await fetch(`${base}/dashboard/assets/app.js`)).status, 200);
    assert.doesNotMatch(hub.log().slice(from), /ENOENT|"level":50/);
  });

  it('answers a bad reload with a clear error and reloads a fixed plugin', async () => {
    const post = (body: string) =>
      fetch(`${base}/admin/dashboard/reload`, {
        method: 'POST',
        headers: { ...auth(), 'Content-Type': 'application/json' },
        body,
      });
    const notJson = await post('{nope');
    assert.equal(notJson.status, 400);
    assert.match(((await notJson.json()) as { error: string }).error, /not valid JSON/);
    const noName = await post('{}');
    assert.equal(noName.status, 400);
    assert.match(((await noName.json()) as { error: string }).error, /"plugin"/);
    const tooBig = await post(JSON.stringify({ plugin: 'x'.repeat(10_000) }));
    assert.equal(tooBig.status, 400);
    const unknown = await post(JSON.stringify({ plugin: 'nobody' }));
    assert.equal(unknown.status, 404);
    writeFileSync(join(dir.plugins, 'fixme.lua'), GOOD);
    const fixed = await post(JSON.stringify({ plugin: 'fixme' }));
    assert.equal(fixed.status, 200);
    assert.deepEqual(await fixed.json(), { plugin: 'fixme', loaded: true });
    const call = await rawPost(hub.url, {
      method: 'tools/call',
      params: { name: 'fixme.ok', arguments: {} },
    });
    assert.match(call.text, /fixed/);
  });

  it('bounds the live call streams and frees a slot when a viewer leaves', async () => {
    const first = new AbortController();
    const one = await fetch(`${base}/admin/dashboard/calls`, {
      headers: auth(),
      signal: first.signal,
    });
    assert.equal(one.status, 200);
    assert.match(one.headers.get('content-type') ?? '', /text\/event-stream/);
    const two = await fetch(`${base}/admin/dashboard/calls`, { headers: auth() });
    assert.equal(two.status, 503);
    assert.match(((await two.json()) as { error: string }).error, /at most 1 live stream/);
    first.abort();
    let status = 0;
    for (let i = 0; i < 50 && status !== 200; i++) {
      await new Promise((r) => setTimeout(r, 100));
      const again = new AbortController();
      const res = await fetch(`${base}/admin/dashboard/calls`, {
        headers: auth(),
        signal: again.signal,
      });
      status = res.status;
      again.abort();
    }
    assert.equal(status, 200, 'the slot is free again');
    const mcp = await rawPost(hub.url, { method: 'tools/list' });
    assert.equal(mcp.status, 200, 'MCP still served');
  });

  it('serves metrics on their own address without a token, and not on the MCP port', async () => {
    const m = /metrics at (\S+)/.exec(hub.log());
    assert.ok(m, 'the metrics address is printed');
    const res = await fetch(m[1]!);
    assert.equal(res.status, 200);
    assert.ok(sample(await res.text(), 'moonhub_plugin_up', { plugin: 'fixme' }) === 1);
    assert.equal((await fetch(m[1]!.replace('/metrics', '/readyz'))).status, 200);
    assert.equal((await fetch(m[1]!.replace('/metrics', '/mcp'))).status, 404);
    assert.equal((await fetch(`${base}/metrics`, { headers: auth() })).status, 404);
  });
});

describe('observe config errors', () => {
  it('names an unknown observe key', () => {
    const dir = makeHubDir({});
    const config = dir.write(
      'moonhub.json',
      JSON.stringify({ observe: { metrics: { enable: true } } }),
    );
    const r = spawnSync(
      process.execPath,
      [BIN, 'serve', '--config', config, '--plugins', dir.plugins],
      {
        encoding: 'utf8',
        timeout: 30_000,
      },
    );
    assert.notEqual(r.status, 0);
    assert.match(r.stderr, /observe\.metrics\.enable.*not a known setting/);
  });
});
