/**
 * A Redis that stops answering while its connections stay up (a real redis-server stopped with
 * SIGSTOP): the hub keeps serving, with bounded memory and no request waiting forever.
 *
 * - The shared rate buckets (`limits.rate.global`) keep one take per key in flight: a burst of
 *   one principal's calls costs the store a few commands, not one each, and a stall leaves a
 *   few commands queued, not one per request (before: ~40 MB a second of queued commands).
 * - Every command fails after `cluster.limits.command_timeout_ms`: a 2025 request whose session
 *   this process has never seen gets 503 `session_store_unavailable` instead of waiting for
 *   ever, and the session is still there once Redis answers again.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { rawPost } from '../helpers/auth-hub.js';
import { skipWithout } from '../helpers/services.js';
import {
  PROBE_PLUGIN,
  sleep,
  startRedisFleet,
  type RedisFleet,
} from '../helpers/cluster-fixture.js';
import { call, initializeSession, rawRequest, sessionPost } from '../helpers/legacy-raw.js';
import { rssMiB } from './helpers.js';

const TIMEOUT_MS = 400;
const config = (redis: string) => `
hub_id: stall
plugins: { dirs: [plugins] }
limits: { rate: { principal: { per_second: 1000000, burst: 1000000 }, global: true } }
cluster: { redis: "${redis}", limits: { command_timeout_ms: ${TIMEOUT_MS} } }
`;

const ECHO = { method: 'tools/call', params: { name: 'probe.echo', arguments: {} } };

/** `n` 2026-07-28 calls, `width` at a time; their latencies (ms) and statuses. */
async function load(url: string, n: number, width: number) {
  const times: number[] = [];
  const statuses = new Map<number, number>();
  let next = 0;
  const lane = async () => {
    while (next++ < n) {
      const t0 = performance.now();
      const r = await rawPost(url, ECHO);
      times.push(performance.now() - t0);
      statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
    }
  };
  await Promise.all(Array.from({ length: width }, lane));
  times.sort((a, b) => a - b);
  return { p99: times[Math.floor(times.length * 0.99)]!, statuses };
}

async function evalshaCalls(admin: Redis): Promise<number> {
  const info = await admin.info('commandstats');
  return Number(/cmdstat_evalsha:calls=(\d+)/.exec(info)?.[1] ?? 0);
}

describe('a Redis that stops answering', { skip: skipWithout('redis-server') }, () => {
  let fleet: RedisFleet;
  let admin: Redis;

  before(async () => {
    fleet = await startRedisFleet({ instances: 2, plugins: { probe: PROBE_PLUGIN }, config });
    admin = new Redis(fleet.redis.url, { lazyConnect: true, maxRetriesPerRequest: 1 });
    await admin.connect();
  });
  after(async () => {
    fleet?.redis.child.kill('SIGCONT');
    admin?.disconnect();
    await fleet?.stop();
  });

  it('one principal at full speed costs the shared buckets a take per round trip, not per call', async () => {
    await admin.config('RESETSTAT');
    const r = await load(fleet.hubs[0]!.url, 400, 40);
    assert.deepEqual([...r.statuses], [[200, 400]]);
    const takes = await evalshaCalls(admin);
    // One per request before; now the calls admitted while a take is out go with the next one.
    assert.ok(takes >= 1 && takes <= 300, `${takes} takes for 400 calls`);
  });

  it('stopped: calls go on, memory and queued commands stay bounded, an unknown session gets 503, nothing is lost', async () => {
    const [a, b] = [fleet.hubs[0]!, fleet.hubs[1]!];
    const { sessionId } = await initializeSession(a.url, undefined);
    await admin.config('RESETSTAT');
    const rss0 = rssMiB(a.child.pid!);
    fleet.redis.child.kill('SIGSTOP');
    try {
      // The 2026-07-28 calls need no answer from Redis.
      const r = await load(a.url, 1500, 30);
      assert.deepEqual([...r.statuses], [[200, 1500]]);
      assert.ok(r.p99 < 1000, `p99 ${r.p99.toFixed(0)} ms while Redis is stopped`);
      // A process that never saw the session cannot check it: it says so, within the timeout.
      const t0 = performance.now();
      const answer = rawRequest(b.url, {
        method: 'POST',
        sessionId,
        body: call('tools/call', { name: 'probe.echo', arguments: {} }),
      }).then(async (res) => ({ status: res.status, body: await res.done }));
      const late = sleep(TIMEOUT_MS + 3000).then(() => ({ status: 0, body: 'no answer' }));
      const { status, body } = await Promise.race([answer, late]);
      const ms = performance.now() - t0;
      assert.equal(status, 503, body);
      assert.match(body, /session_store_unavailable|shared session store did not answer/);
      assert.ok(ms < TIMEOUT_MS + 2000, `answered after ${ms.toFixed(0)} ms`);
      const grown = rssMiB(a.child.pid!) - rss0;
      assert.ok(grown < 80, `the hub grew by ${grown.toFixed(0)} MiB while Redis was stopped`);
    } finally {
      fleet.redis.child.kill('SIGCONT');
    }
    // What the stall left queued runs now: a few takes, not one per call (1,500 before).
    await sleep(300);
    const takes = await evalshaCalls(admin);
    assert.ok(takes <= 40, `${takes} takes ran after the stall`);
    // Nothing lost: the session works through the other process once Redis answers.
    let ok = false;
    for (let i = 0; i < 40 && !ok; i++) {
      const r = await sessionPost(
        b.url,
        undefined,
        sessionId,
        call('tools/call', {
          name: 'probe.echo',
          arguments: {},
        }),
      );
      ok = r.status === 200 && r.text.includes('echoed');
      if (!ok) await sleep(100);
    }
    assert.ok(ok, 'the session was not served after Redis came back');
    assert.ok(a.alive() && b.alive());
  });
});
