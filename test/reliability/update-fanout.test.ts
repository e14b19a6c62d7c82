/**
 * A resource update reaches the 2025 sessions subscribed to its URI, and only those are visited.
 * The bus used to walk every session for each update: with 10,000 idle sessions that was ~220 µs
 * of the hub's thread an update (1-4 ms on a slow machine), whoever had subscribed, and each
 * plugin may send 1,000 updates a second (`plugin_limits.resource_updates_per_second`), so a few
 * plugins' updates could take the whole thread. Now an index of subscribers (URI → sessions)
 * answers it, kept in step by subscribe, unsubscribe and the session's end.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startPluginHub, type PluginHub } from '../helpers/plugin-hub.js';
import {
  call as rpc,
  initializeSession,
  rawRequest,
  sessionPost,
  type RawResponse,
} from '../helpers/legacy-raw.js';
import { call, cpuMs } from './helpers.js';
import { initialize, MODERN_META, pool, sleep } from './limits-helpers.js';

const PLUGIN = String.raw`
mcp.resource("fan://hot", { name = "hot" }, function() return "hot" end)
mcp.resource("fan://cold", { name = "cold" }, function() return "cold" end)
mcp.tool("burst", {
  input_schema = { type = "object", properties = { n = { type = "number" }, uri = { type = "string" } } },
}, function(p)
  for _ = 1, p.n do mcp.resource_updated(p.uri) end
  return tostring(p.n)
end)
`;

/** Idle sessions opened beside the subscribers (the default total is 10,000). */
const IDLE = 6_000;
/** 2026-07-28 listen streams on another URI (the default total is 1,024, raised here). */
const LISTENS = 2_000;
/** Updates a measure sends: one burst of the plugin's whole rate (raised here). */
const BURSTS = 1;
const PER_BURST = 30_000;
const CONFIG = `
limits: {
  sessions: { total: ${IDLE + 100}, per_principal: ${IDLE + 100} },
  listens: { total: ${LISTENS + 10}, per_principal: ${LISTENS + 10} },
}
plugin_limits: { resource_updates_per_second: ${PER_BURST} }
`;
/**
 * Hub-thread CPU the idle sessions may add to the updates: the measure without them (or
 * 150 ms), so a slower machine gets a bound as much larger. Walking 10,000 of them added
 * ~113 µs an update on a slow machine (20,000 updates: 2.3 s, against 0.4-0.6 s without);
 * with the index the two measures differ by noise (up to ~130 ms seen).
 */
const extraBoundMs = (few: number) => Math.max(150, few);

let setup: PluginHub;

before(async () => {
  setup = await startPluginHub({ 'fan.lua': PLUGIN }, (dir) => [
    '--plugins',
    `${dir.dir}/plugins`,
    '--no-watch',
    '--config',
    dir.write('moonhub.yaml', CONFIG),
  ]);
});

after(() => setup?.stop());

/** A 2025 session with its GET stream open, subscribed to `uris`. */
async function subscriber(
  url: string,
  uris: string[],
): Promise<{ sid: string; stream: RawResponse }> {
  const { sessionId: sid } = await initializeSession(url, undefined);
  for (const uri of uris) {
    const r = await sessionPost(url, undefined, sid, rpc('resources/subscribe', { uri }));
    assert.equal(r.status, 200, r.text);
    assert.doesNotMatch(r.text, /"error"/);
  }
  const stream = await rawRequest(url, { method: 'GET', sessionId: sid });
  assert.equal(stream.status, 200);
  return { sid, stream };
}

const updates = (s: RawResponse, uri: string) =>
  s.text().split(`"method":"notifications/resources/updated","params":{"uri":"${uri}"`).length - 1;

/** The hub thread's CPU for `BURSTS` bursts of updates of a URI nobody idle subscribed to. */
async function burstCpuMs(): Promise<number> {
  const pid = setup.hub.child.pid!;
  const before = cpuMs(pid, pid);
  for (let i = 0; i < BURSTS; i++) {
    const r = await call(setup.client, 'burst', { n: PER_BURST, uri: 'fan://hot' });
    assert.equal(r.text, String(PER_BURST));
    // The updates reach the hub after the answer; the rate refills in a second.
    await sleep(1100);
  }
  return cpuMs(pid, pid) - before;
}

describe('resource updates fan out to their subscribers only', () => {
  it('reaches each subscriber of the URI, not the others, not after unsubscribe or end', async () => {
    const url = setup.hub.url;
    const hot = await subscriber(url, ['fan://hot']);
    const cold = await subscriber(url, ['fan://cold']);
    const left = await subscriber(url, ['fan://hot', 'fan://cold']);
    const r = await sessionPost(
      url,
      undefined,
      left.sid,
      rpc('resources/unsubscribe', { uri: 'fan://hot' }),
    );
    assert.equal(r.status, 200, r.text);
    try {
      await call(setup.client, 'burst', { n: 1, uri: 'fan://hot' });
      await call(setup.client, 'burst', { n: 1, uri: 'fan://cold' });
      await hot.stream.waitFor(/fan:\/\/hot/);
      await cold.stream.waitFor(/fan:\/\/cold/);
      await left.stream.waitFor(/fan:\/\/cold/);
      await sleep(200);
      assert.equal(updates(hot.stream, 'fan://hot'), 1);
      assert.equal(updates(hot.stream, 'fan://cold'), 0);
      assert.equal(updates(cold.stream, 'fan://hot'), 0);
      assert.equal(updates(left.stream, 'fan://hot'), 0, 'an unsubscribed URI was told');
      assert.equal(updates(left.stream, 'fan://cold'), 1);

      // A session that ended (DELETE) is out of the index: the others still hear.
      const del = await rawRequest(url, { method: 'DELETE', sessionId: hot.sid });
      assert.equal(del.status, 200);
      await hot.stream.done;
      const again = await subscriber(url, ['fan://hot']);
      await call(setup.client, 'burst', { n: 1, uri: 'fan://hot' });
      await again.stream.waitFor(/fan:\/\/hot/);
      again.stream.close();
    } finally {
      for (const s of [hot, cold, left]) s.stream.close();
    }
  });

  it(`6,000 idle sessions add (almost) nothing to an update's cost`, async (t) => {
    const url = setup.hub.url;
    const listener = await subscriber(url, ['fan://hot']);
    try {
      // Warm-up, then the measure with a handful of sessions.
      await burstCpuMs();
      const few = await burstCpuMs();
      const t0 = performance.now();
      const opened = await pool(IDLE, 16, async () => (await initialize(url)).status);
      assert.ok(
        opened.every((s) => s === 200),
        `statuses: ${[...new Set(opened)].join(', ')}`,
      );
      const openMs = performance.now() - t0;
      const heardBefore = updates(listener.stream, 'fan://hot');
      const many = await burstCpuMs();
      t.diagnostic(
        `hub thread for ${BURSTS * PER_BURST} updates: ${few} ms with a few sessions, ${many} ms with ${IDLE} more (opened in ${openMs.toFixed(0)} ms)`,
      );
      // Every update passed the rate reached the one subscriber, with the idle sessions there.
      const want = heardBefore + BURSTS * PER_BURST;
      for (let i = 0; updates(listener.stream, 'fan://hot') < want; i++) {
        assert.ok(
          i < 100,
          `the subscriber heard ${updates(listener.stream, 'fan://hot')} of ${want}`,
        );
        await sleep(100);
      }
      assert.ok(
        many - few < extraBoundMs(few),
        `the idle sessions added ${many - few} ms of the hub's thread to ${BURSTS * PER_BURST} updates`,
      );
    } finally {
      listener.stream.close();
    }
  });

  // Each open stream used to be a registry listener of its own, called for every update (~26 µs
  // an update per 1,000 streams here); the bound is the measure without them, or 60 ms.
  it(`2,000 listen streams on another URI add (almost) nothing either`, async (t) => {
    const url = setup.hub.url;
    const few = await burstCpuMs();
    const streams = await pool(LISTENS, 16, () => listen(url, 'fan://cold'));
    try {
      const many = await burstCpuMs();
      t.diagnostic(
        `hub thread for ${BURSTS * PER_BURST} updates: ${few} ms, ${many} ms with ${LISTENS} listens on another URI`,
      );
      assert.ok(
        many - few < Math.max(60, few),
        `the listens added ${many - few} ms of the hub's thread to ${BURSTS * PER_BURST} updates`,
      );
      // Each still hears its own URI.
      await call(setup.client, 'burst', { n: 1, uri: 'fan://cold' });
      await Promise.all([streams[0]!, streams.at(-1)!].map((s) => s.waitFor(/fan:\/\/cold"/)));
    } finally {
      for (const s of streams) s.close();
    }
  });
});

/** A 2026-07-28 `subscriptions/listen` stream for `uri`, once acknowledged. */
async function listen(url: string, uri: string): Promise<RawResponse> {
  const s = await rawRequest(url, {
    method: 'POST',
    headers: { 'MCP-Protocol-Version': '2026-07-28', 'Mcp-Method': 'subscriptions/listen' },
    body: {
      jsonrpc: '2.0',
      id: 'listen',
      method: 'subscriptions/listen',
      params: { notifications: { resourceSubscriptions: [uri] }, _meta: MODERN_META },
    },
  });
  assert.equal(s.status, 200, s.text());
  await s.waitFor(/subscriptions\/acknowledged/);
  return s;
}
