/**
 * `moonhub serve --workers 2`: two worker processes answer on one port (each request on a new
 * connection goes round-robin); a session token revoked through one worker is refused by both
 * at once (they share the data folder); `mcp.resource_updated` on one worker reaches a listener
 * on the other (the IPC bus through the primary); a worker that dies is restarted and the port
 * keeps answering; SIGTERM to the primary stops everything.
 */
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { startMoonhub, type MoonhubProcess } from '../helpers/moonhub-process.js';
import { createSession, makeHubDir, moonhubCli, type HubDir } from '../helpers/auth-hub.js';

const PLUGIN = `
mcp.tool("probe.touch", { description = "tells subscribers the resource changed" }, function()
  mcp.resource_updated("probe://watched")
  return "touched"
end)
mcp.resource("probe://watched", { name = "watched" }, function() return "w" end)
`;

const CONFIG = `
hub_id: local
auth: { mode: token }
plugins: { dirs: [plugins] }
agents: { worker: {} }
cluster: { workers: 2 }
`;

const META = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientCapabilities': {},
};

interface Answer {
  status: number;
  instance: string;
  text: string;
}

/** A 2026-07-28 POST on a connection of its own (so round-robin picks a worker for each). */
function post(url: string, token: string, method: string, params: object = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const body = JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method,
      params: { ...params, _meta: META },
    });
    const name = (params as { name?: string }).name;
    const req = request(
      url,
      {
        method: 'POST',
        agent: false,
        headers: {
          Authorization: `Bearer ${token}`,
          'Content-Type': 'application/json',
          Accept: 'application/json, text/event-stream',
          'MCP-Protocol-Version': '2026-07-28',
          'Mcp-Method': method,
          ...(name === undefined ? {} : { 'Mcp-Name': name }),
        },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => (text += d));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            instance: String(res.headers['x-moonhub-instance']),
            text,
          }),
        );
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

describe('serve --workers 2', () => {
  let dir: HubDir;
  let cfg: string;
  let hub: MoonhubProcess;

  before(async () => {
    dir = makeHubDir({ probe: PLUGIN });
    cfg = dir.write('moonhub.yaml', CONFIG);
    hub = await startMoonhub(['--config', cfg, '--data', dir.data]);
    // The primary announces the port at the first worker's; wait for both workers' lines.
    for (let i = 0; (hub.log().match(/worker \d+ \(pid \d+, instance/g) ?? []).length < 2; i++) {
      assert.ok(i < 300, `two workers not ready:\n${hub.log()}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  });
  after(async () => hub?.stop());

  const workerPids = () => [
    ...hub.log().matchAll(/worker \d+ \(pid (\d+), instance ([0-9a-f]+)\)/g),
  ];

  it('two worker pids answer on one port; a token revoked through one is refused by both', async () => {
    const pids = new Set(workerPids().map((m) => m[1]));
    assert.equal(pids.size, 2, hub.log());
    assert.ok(!pids.has(String(hub.child.pid)), 'the primary serves nothing itself');
    const s = createSession(['--config', cfg, '--data', dir.data, '--agent', 'worker']);
    const adminR = moonhubCli([
      'session',
      'create',
      '--admin',
      '--config',
      cfg,
      '--data',
      dir.data,
    ]);
    const adminToken = (JSON.parse(adminR.stdout) as { token: string }).token;
    const seen = new Set<string>();
    for (let i = 0; i < 8 && seen.size < 2; i++) {
      const r = await post(hub.url, s.token, 'tools/list');
      assert.equal(r.status, 200, r.text);
      seen.add(r.instance);
    }
    assert.equal(seen.size, 2, 'both workers answered');
    const byInstance = new Map(workerPids().map((m) => [m[2]!, m[1]!]));
    assert.deepEqual(new Set([...seen].map((i) => byInstance.get(i))), pids);

    const res = await fetch(new URL(`/admin/sessions/${s.session_uuid}`, hub.url), {
      method: 'DELETE',
      headers: { Authorization: `Bearer ${adminToken}` },
    });
    assert.equal(res.status, 200);
    const refusedBy = new Set<string>();
    const start = Date.now();
    while (refusedBy.size < 2) {
      const r = await post(hub.url, s.token, 'tools/list');
      assert.ok(r.status === 403 || Date.now() - start < 1000, 'accepted after a second');
      if (r.status === 403) refusedBy.add(r.instance);
      assert.ok(Date.now() - start < 10_000, 'only one worker answered for 10 s');
    }
  });

  it('mcp.resource_updated on one worker reaches a listener on the other', async () => {
    const s = createSession(['--config', cfg, '--data', dir.data, '--agent', 'worker']);
    let text = '';
    let listenInstance = '';
    const listen = request(hub.url, {
      method: 'POST',
      agent: false,
      headers: {
        Authorization: `Bearer ${s.token}`,
        'Content-Type': 'application/json',
        Accept: 'application/json, text/event-stream',
        'MCP-Protocol-Version': '2026-07-28',
        'Mcp-Method': 'subscriptions/listen',
      },
    });
    const opened = new Promise<void>((resolve, reject) => {
      listen.on('response', (res) => {
        listenInstance = String(res.headers['x-moonhub-instance']);
        res.setEncoding('utf8');
        res.on('data', (d: string) => {
          text += d;
          if (/subscriptions\/acknowledged/.test(text)) resolve();
        });
      });
      listen.on('error', reject);
    });
    listen.end(
      JSON.stringify({
        jsonrpc: '2.0',
        id: 'sub-1',
        method: 'subscriptions/listen',
        params: { notifications: { resourceSubscriptions: ['probe://watched'] }, _meta: META },
      }),
    );
    await opened;
    // Touch until the call lands on the other worker.
    let other: Answer | undefined;
    for (let i = 0; i < 10 && other === undefined; i++) {
      const r = await post(hub.url, s.token, 'tools/call', { name: 'probe.touch', arguments: {} });
      assert.equal(r.status, 200, r.text);
      if (r.instance !== listenInstance) other = r;
    }
    assert.ok(other, 'no call landed on the other worker');
    const start = Date.now();
    while (!/notifications\/resources\/updated/.test(text)) {
      assert.ok(Date.now() - start < 5000, 'the update never crossed workers');
      await new Promise((r) => setTimeout(r, 10));
    }
    listen.destroy();
  });

  it('a worker that dies is restarted and the port keeps answering', async () => {
    const s = createSession(['--config', cfg, '--data', dir.data, '--agent', 'worker']);
    const victim = Number(workerPids()[0]![1]);
    const from = hub.log().length;
    process.kill(victim, 'SIGKILL');
    await hub.waitForLog(/worker \d+ \(pid \d+\) died/, from, 10_000);
    await hub.waitForLog(/worker \d+ \(pid \d+, instance [0-9a-f]+\) ready/, from, 30_000);
    const seen = new Set<string>();
    for (let i = 0; i < 8 && seen.size < 2; i++) {
      const r = await post(hub.url, s.token, 'tools/list');
      assert.equal(r.status, 200, r.text);
      seen.add(r.instance);
    }
    assert.equal(seen.size, 2, 'two workers again');
  });
});
