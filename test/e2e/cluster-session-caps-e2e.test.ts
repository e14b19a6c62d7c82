/**
 * The session caps of issue 12 hold cluster-wide (issue 16): one principal at
 * `limits.sessions.per_principal` across several processes gets 429 on every one of them while
 * another principal still gets in; a full shared store ends the oldest idle session (its GET
 * stream on another instance ends too) instead of refusing the newcomer, and refuses (503) only
 * when none is idle. Two real hub processes on one real redis-server, and `serve --workers 2`.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { MoonhubProcess } from '../helpers/moonhub-process.js';
import { skipWithout } from '../helpers/services.js';
import {
  sleep,
  startRedisFleet,
  startWorkersHub,
  type RedisFleet,
  type WorkersHub,
} from '../helpers/cluster-fixture.js';
import {
  call,
  initializeSession,
  LEGACY_VERSION,
  rawRequest,
  sessionPost,
} from '../helpers/legacy-raw.js';

const PLUGIN = `
mcp.tool("probe.echo", { description = "echo" }, function() return "echoed" end)
mcp.tool("probe.slow", { description = "waits" }, function(params)
  task.sleep(params.wait or 1000)
  return "slow done"
end)
`;

/** One initialize: its status, body and session id (no notifications/initialized needed). */
async function tryInit(url: string, token: string) {
  const res = await rawRequest(url, {
    method: 'POST',
    token,
    body: {
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: {
        protocolVersion: LEGACY_VERSION,
        capabilities: {},
        clientInfo: { name: 'cap', version: '1' },
      },
    },
  });
  const text = await res.done;
  return { status: res.status, text, sessionId: res.sessionId };
}

const ping = (url: string, token: string, sid: string) =>
  sessionPost(url, token, sid, call('ping'));

describe('session caps across instances on Redis', { skip: skipWithout('redis-server') }, () => {
  let fleet: RedisFleet;
  let hubs: MoonhubProcess[];
  // idle_timeout 40 s: Redis touches a record every 2 s at most, so a session counts as idle
  // for eviction after 4 s silent (twice that); evict_idle_ms is below it on purpose.
  const config = (url: string) => `
hub_id: fleet
auth: { mode: token }
plugins: { dirs: [plugins] }
agents: { worker: {} }
limits: { sessions: { per_principal: 3, evict_idle_ms: 500, idle_timeout_ms: 40000 } }
cluster: { redis: "${url}", limits: { max_sessions: 5, idle_timeout_ms: 40000 } }
`;

  const newToken = async (): Promise<string> => (await fleet.newToken()).token;

  before(async () => {
    fleet = await startRedisFleet({ instances: 2, plugins: { probe: PLUGIN }, config });
    ({ hubs } = fleet);
  });
  after(async () => fleet?.stop());

  it('a principal at its cap across instances gets 429; the store full evicts the oldest idle, else 503', async () => {
    const [one, two] = [hubs[0]!.url, hubs[1]!.url];
    const [a, b, c, d, e] = [
      await newToken(),
      await newToken(),
      await newToken(),
      await newToken(),
      await newToken(),
    ];
    const a1 = (await initializeSession(one, a)).sessionId;
    const a2 = (await initializeSession(one, a)).sessionId;
    const a3 = (await initializeSession(two, a)).sessionId;
    // Per process A has 2 and 1: only the cluster-wide count refuses the fourth, on either.
    for (const url of [two, one]) {
      const r = await tryInit(url, a);
      assert.equal(r.status, 429, r.text);
      assert.match(r.text, /limits\.sessions\.per_principal/);
    }
    const b1 = (await initializeSession(two, b)).sessionId;
    const c1 = (await initializeSession(one, c)).sessionId;
    // The store is full (5). a1 holds a GET stream on instance one, then falls silent.
    const stream = await rawRequest(one, { method: 'GET', token: a, sessionId: a1 });
    assert.equal(stream.status, 200);
    await sleep(4500);
    for (const [url, tok, sid] of [
      [two, a, a2],
      [one, a, a3],
      [one, b, b1],
      [two, c, c1],
    ] as const)
      assert.equal((await ping(url, tok, sid)).status, 200);
    // D through instance two: a1 (the only idle one) makes room, and its stream on one ends.
    const d1 = await tryInit(two, d);
    assert.equal(d1.status, 200, d1.text);
    await Promise.race([stream.done, sleep(10_000).then(() => assert.fail('a1 stream not ended'))]);
    for (const url of [one, two]) assert.equal((await ping(url, a, a1)).status, 404);
    // Nobody idle now: the newcomer is refused, and the others keep being served.
    const e1 = await tryInit(one, e);
    assert.equal(e1.status, 503, e1.text);
    assert.match(e1.text, /too many sessions/);
    assert.equal((await ping(two, b, b1)).status, 200);
    assert.equal((await ping(one, d, d1.sessionId!)).status, 200);
  });
});

describe('session caps across serve --workers 2', () => {
  let w: WorkersHub;
  let hub: MoonhubProcess;

  before(async () => {
    w = await startWorkersHub({
      plugins: { probe: PLUGIN },
      config: `
hub_id: local
auth: { mode: token }
plugins: { dirs: [plugins] }
agents: { worker: {} }
limits: { sessions: { per_principal: 3 } }
cluster: { workers: 2 }
`,
    });
    hub = w.hub;
  });
  after(async () => hub?.stop());

  it('a principal at its cap gets 429 from both workers; another principal still gets in', async () => {
    const issue = () => w.newToken();
    const [a, b] = [issue(), issue()];
    const seen = new Set<string>();
    for (let i = 0; i < 3; i++) seen.add((await initializeSession(hub.url, a)).instance);
    for (let i = 0; i < 4; i++) {
      const r = await tryInit(hub.url, a);
      assert.equal(r.status, 429, `${r.text} (A's sessions on ${[...seen].join(', ')})`);
      assert.match(r.text, /limits\.sessions\.per_principal/);
    }
    const other = await initializeSession(hub.url, b);
    assert.equal((await sessionPost(hub.url, b, other.sessionId, call('ping'))).status, 200);
  });
});

describe('serve --workers 2: eviction across workers spares a session whose call runs', () => {
  let w: WorkersHub;
  let hub: MoonhubProcess;

  before(async () => {
    w = await startWorkersHub({
      plugins: { probe: PLUGIN },
      config: `
hub_id: local
auth: { mode: token }
plugins: { dirs: [plugins] }
agents: { worker: {} }
limits: { sessions: { per_principal: 2, evict_idle_ms: 1000 } }
# idle_timeout 20 s: a worker writes a record's last activity every 1 s at most, so a session
# counts as idle for eviction after 2 s silent (twice that).
cluster: { workers: 2, limits: { idle_timeout_ms: 20000 } }
`,
    });
    hub = w.hub;
  });
  after(async () => hub?.stop());

  it('the principal at its cap gives up its idle session, not the older one with a call running', async () => {
    const a = w.newToken();
    const busy = (await initializeSession(hub.url, a)).sessionId;
    const slow = sessionPost(
      hub.url,
      a,
      busy,
      call('tools/call', { name: 'probe.slow', arguments: { wait: 4000 } }),
    );
    await sleep(300);
    // Opened after the call started: `busy` is the older in last activity, yet must be spared.
    const idle = (await initializeSession(hub.url, a)).sessionId;
    await sleep(2500); // both silent past evict_idle_ms; only `busy` has a call running
    const third = await tryInit(hub.url, a);
    assert.equal(third.status, 200, third.text);
    assert.equal((await ping(hub.url, a, idle)).status, 404, 'the idle one made room');
    const done = await slow;
    assert.equal(done.status, 200, done.text);
    assert.match(done.text, /slow done/);
    assert.equal((await ping(hub.url, a, busy)).status, 200);
  });
});
