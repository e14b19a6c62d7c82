/**
 * Client answers between instances on a real redis-server (issue 12): an answer crosses the bus
 * to the instance whose request waits only when its id's tag checks (an HMAC under the key the
 * instances share through Redis), once per id, and within `max_forwarded_answer_bytes`. A spy
 * subscribed to the owner's answers channel counts what crosses. Before, every answer whose id
 * merely looked like the hub's was published there, forged or replayed, whatever its size.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { skipWithout } from '../helpers/services.js';
import { PROBE_PLUGIN, startRedisFleet, type RedisFleet } from '../helpers/cluster-fixture.js';
import { call, initializeSession, rawRequest, sessionPost } from '../helpers/legacy-raw.js';

const config = (redis: string) => `
hub_id: answers
auth: { mode: token }
plugins: { dirs: [plugins] }
agents: { worker: {} }
cluster: { redis: "${redis}", limits: { max_forwarded_answer_bytes: 65536 } }
`;

const accept = (id: string, name: string) => ({
  jsonrpc: '2.0',
  id,
  result: { action: 'accept', content: { name } },
});

describe('client answers between instances on Redis', { skip: skipWithout('redis-server') }, () => {
  let fleet: RedisFleet;
  let spy: Redis;
  /** The messages published on the second instance's answers channel, as Redis carried them. */
  const crossed: string[] = [];
  let a: string;
  let b: string;
  let bInstance: string;
  let token: string;

  before(async () => {
    fleet = await startRedisFleet({ instances: 2, plugins: { probe: PROBE_PLUGIN }, config });
    [a, b] = fleet.hubs.map((h) => h.url) as [string, string];
    ({ token } = await fleet.newToken());
    const probe = await rawRequest(b, { method: 'POST', token, body: call('ping') });
    await probe.done;
    bInstance = probe.instance;
    spy = new Redis(fleet.redis.url);
    spy.on('message', (_channel: string, text: string) => crossed.push(text));
    await spy.subscribe(`moonhub:answers:bus:answers.${bInstance}`);
  });
  after(async () => {
    spy?.disconnect();
    await fleet?.stop();
  });

  /** A `probe.ask` call running on the second instance, and the id of its elicitation. */
  async function askOnB(sessionId: string) {
    const running = await rawRequest(b, {
      method: 'POST',
      token,
      sessionId,
      body: call('tools/call', { name: 'probe.ask', arguments: {} }),
    });
    assert.equal(running.status, 200);
    assert.equal(running.instance, bInstance);
    const asked = await running.waitFor(/"id":"moonhub-[^"]+","method":"elicitation\/create"/);
    return { running, id: /"id":"(moonhub-[^"]+)"/.exec(asked)![1]! };
  }

  it('forged ids naming the other instance are refused where they land', async () => {
    const { sessionId } = await initializeSession(a, token, { elicitation: {} });
    const { running, id } = await askOnB(sessionId);
    const before = crossed.length;
    const pad = 'x'.repeat(32 * 1024);
    const n = Number(/^moonhub-[^-]+-(\d+)/.exec(id)![1]);
    const forged = [
      `moonhub-${bInstance}-${n}`,
      `moonhub-${bInstance}-${n}-${'A'.repeat(22)}`,
      id.slice(0, -1) + (id.endsWith('A') ? 'B' : 'A'),
      ...Array.from({ length: 60 }, (_, i) => `moonhub-${bInstance}-${i + 1}`),
      ...Array.from({ length: 60 }, (_, i) => `moonhub-${bInstance}-${i + 1}-${'Q'.repeat(22)}`),
    ];
    for (const f of forged) {
      const r = await sessionPost(a, token, sessionId, accept(f, pad));
      assert.equal(r.status, 202, r.text);
    }
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(crossed.length - before, 0, `${crossed.length - before} forged answers crossed`);
    // The call still waits for its real answer, and gets it through the other instance.
    const real = await sessionPost(a, token, sessionId, accept(id, 'ada'));
    assert.equal(real.status, 202);
    await running.waitFor(/hello ada/, 10_000);
    assert.equal(crossed.length - before, 1);
  });

  it("another session's id is not forwarded; an honest answer crosses once however often it is sent", async () => {
    const { sessionId } = await initializeSession(a, token, { elicitation: {} });
    const { sessionId: otherSession } = await initializeSession(a, token, { elicitation: {} });
    const { running, id } = await askOnB(sessionId);
    const before = crossed.length;
    // The same id from another session (of the same principal) does not check.
    const stolen = await sessionPost(a, token, otherSession, accept(id, 'mallory'));
    assert.equal(stolen.status, 202);
    for (let i = 0; i < 20; i++) {
      const r = await sessionPost(a, token, sessionId, accept(id, 'ada'));
      assert.equal(r.status, 202, r.text);
    }
    await running.waitFor(/hello ada/, 10_000);
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(crossed.length - before, 1, `${crossed.length - before} copies crossed`);
  });

  it('an answer over max_forwarded_answer_bytes fails its call at once, naming the key', async () => {
    const { sessionId } = await initializeSession(a, token, { elicitation: {} });
    const { running, id } = await askOnB(sessionId);
    const before = crossed.length;
    const r = await sessionPost(a, token, sessionId, accept(id, 'y'.repeat(100_000)));
    assert.equal(r.status, 202);
    await running.waitFor(/max_forwarded_answer_bytes/, 5000);
    assert.match(running.text(), /larger than 65536 bytes/);
    assert.doesNotMatch(running.text(), /hello/);
    assert.equal(crossed.length - before, 1);
    assert.ok(crossed.at(-1)!.length < 2000, `${crossed.at(-1)!.length} characters crossed`);
  });
});
