/**
 * An operator's plugin reload through one worker (`POST /admin/dashboard/reload`, file watching
 * off) reaches every worker: both reload, and the clients whose streams either holds (2025 GET
 * streams and 2026-07-28 `subscriptions/listen`) hear `notifications/tools/list_changed`.
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { startMoonhub, type MoonhubProcess } from '../helpers/moonhub-process.js';
import { createSession, makeHubDir, moonhubCli, type HubDir } from '../helpers/auth-hub.js';
import {
  call,
  initializeSession,
  rawRequest,
  sessionPost,
  type RawResponse,
  openRawListen,
} from '../helpers/legacy-raw.js';

const PLUGIN = `mcp.tool("probe.echo", { description = "echo" }, function() return "echoed" end)\n`;
const ADDED = `${PLUGIN}mcp.tool("probe.added", { description = "new" }, function() return "new" end)\n`;

const CONFIG = `
hub_id: local
auth: { mode: token }
plugins: { dirs: [plugins] }
agents: { worker: {} }
cluster: { workers: 2 }
`;

/** Opens streams with `open` until both workers hold one (round-robin), at most 8. */
async function onBothWorkers(open: () => Promise<RawResponse>): Promise<RawResponse[]> {
  const streams: RawResponse[] = [];
  for (let i = 0; i < 8 && new Set(streams.map((s) => s.instance)).size < 2; i++)
    streams.push(await open());
  assert.equal(new Set(streams.map((s) => s.instance)).size, 2, 'streams on one worker only');
  return streams;
}

describe('serve --workers 2: a dashboard reload through one worker', () => {
  let dir: HubDir;
  let hub: MoonhubProcess;
  const streams: RawResponse[] = [];

  before(async () => {
    dir = makeHubDir({ probe: PLUGIN });
    const cfg = dir.write('moonhub.yaml', CONFIG);
    hub = await startMoonhub(['--config', cfg, '--data', dir.data, '--no-watch']);
    for (let i = 0; (hub.log().match(/worker \d+ \(pid \d+, instance/g) ?? []).length < 2; i++) {
      assert.ok(i < 300, `two workers not ready:\n${hub.log()}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    const token = createSession(['--config', cfg, '--data', dir.data, '--agent', 'worker']).token;
    const admin = moonhubCli(['session', 'create', '--admin', '--config', cfg, '--data', dir.data]);
    const adminToken = (JSON.parse(admin.stdout) as { token: string }).token;

    const gets = await onBothWorkers(async () => {
      const { sessionId } = await initializeSession(hub.url, token);
      const get = await rawRequest(hub.url, { method: 'GET', token, sessionId });
      assert.equal(get.status, 200);
      return get;
    });
    const listens = await onBothWorkers(() => openRawListen(hub.url, token));
    streams.push(...gets, ...listens);

    writeFileSync(join(dir.plugins, 'probe.lua'), ADDED);
    const res = await fetch(new URL('/admin/dashboard/reload', hub.url), {
      method: 'POST',
      headers: { Authorization: `Bearer ${adminToken}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ plugin: 'probe' }),
    });
    assert.equal(res.status, 200, await res.text());
  });
  after(async () => {
    for (const s of streams) s.close();
    await hub?.stop();
  });

  it('every stream on either worker hears tools/list_changed', async () => {
    await Promise.all(streams.map((s) => s.waitFor(/notifications\/tools\/list_changed/, 10_000)));
  });

  it('both workers serve the reloaded plugin', async () => {
    const token = createSession([
      '--config',
      join(dir.root, 'moonhub.yaml'),
      '--data',
      dir.data,
      '--agent',
      'worker',
    ]).token;
    const { sessionId } = await initializeSession(hub.url, token);
    const seen = new Set<string>();
    for (let i = 0; i < 6; i++) {
      const r = await sessionPost(hub.url, token, sessionId, call('tools/list'));
      assert.match(r.text, /probe\.added/, `worker ${r.instance} did not reload`);
      seen.add(r.instance);
    }
    assert.equal(seen.size, 2);
  });
});
