/**
 * A view change reaching clients on other instances, across machines: three real hub processes
 * (their own data folders and plugin copies, file watching off) on one real redis-server behind
 * a real nginx round-robin. The plugin files are updated on every "machine", then an operator's
 * reload lands on one instance (`POST /admin/dashboard/reload` through nginx): every instance
 * reloads (the `plugin_reload` bus message), every client's stream, whichever instance holds
 * it, hears `notifications/tools/list_changed` (2025 GET streams and 2026-07-28
 * `subscriptions/listen`), and every instance lists the new tool.
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { skipWithout } from '../helpers/services.js';
import { startRedisFleet, type RedisFleet } from '../helpers/cluster-fixture.js';
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

const config = (redis: string) => `
hub_id: fleet
auth: { mode: token }
plugins: { dirs: [plugins] }
agents: { worker: {} }
cluster: { redis: "${redis}" }
`;

/**
 * Opens streams with `open` until every instance holds one, at most 12 tries. A stream landing
 * where one is already held is closed, and one ping moves round-robin along (a 2025 stream takes
 * three requests, as many as there are instances).
 */
async function onEvery(
  n: number,
  open: () => Promise<RawResponse>,
  ping: () => Promise<unknown>,
): Promise<RawResponse[]> {
  const streams: RawResponse[] = [];
  for (let i = 0; i < 12 && streams.length < n; i++) {
    const s = await open();
    if (streams.some((o) => o.instance === s.instance)) {
      s.close();
      await ping();
    } else streams.push(s);
  }
  assert.equal(new Set(streams.map((s) => s.instance)).size, n, 'streams not on every instance');
  return streams;
}

describe(
  'a dashboard reload through one instance on Redis, behind nginx',
  { skip: skipWithout('redis-server') || skipWithout('nginx') },
  () => {
    let fleet: RedisFleet;
    let token: string;
    const streams: RawResponse[] = [];

    before(async () => {
      fleet = await startRedisFleet({
        instances: 3,
        plugins: { probe: PLUGIN },
        config,
        nginx: true,
        args: ['--no-watch'],
      });
      const { mcp } = fleet;
      token = (await fleet.newToken()).token;
      const ping = async () =>
        (await rawRequest(mcp, { method: 'POST', token, body: call('ping') })).done;
      const gets = await onEvery(
        3,
        async () => {
          const { sessionId } = await initializeSession(mcp, token);
          const get = await rawRequest(mcp, { method: 'GET', token, sessionId });
          assert.equal(get.status, 200);
          return get;
        },
        ping,
      );
      const listens = await onEvery(3, () => openRawListen(mcp, token), ping);
      streams.push(...gets, ...listens);
    });
    after(async () => {
      for (const s of streams) s.close();
      await fleet?.stop();
    });

    it('every stream on every instance hears tools/list_changed; every instance lists the tool', async () => {
      // A deployment updates the files on every machine; the operator reloads through one.
      for (const d of fleet.dirs) writeFileSync(join(d.plugins, 'probe.lua'), ADDED);
      const start = Date.now();
      const res = await fetch(new URL('/admin/dashboard/reload', fleet.nginx!.url), {
        method: 'POST',
        headers: {
          Authorization: `Bearer ${fleet.adminToken}`,
          'Content-Type': 'application/json',
        },
        body: JSON.stringify({ plugin: 'probe' }),
      });
      assert.equal(res.status, 200, await res.text());
      await Promise.all(
        streams.map((s) => s.waitFor(/notifications\/tools\/list_changed/, 10_000)),
      );
      process.stderr.write(
        `reload through one instance: ${streams.length} streams on 3 instances told in ${Date.now() - start} ms\n`,
      );
      const { sessionId } = await initializeSession(fleet.mcp, token);
      const seen = new Set<string>();
      for (let i = 0; i < 6; i++) {
        const r = await sessionPost(fleet.mcp, token, sessionId, call('tools/list'));
        assert.match(r.text, /probe\.added/, `instance ${r.instance} did not reload`);
        seen.add(r.instance);
      }
      assert.equal(seen.size, 3);
    });
  },
);
