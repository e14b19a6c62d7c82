/**
 * The bus's delivery contract on every carrier: a message reaches each handler of its channel in
 * every process exactly once (the publisher's own included), in order; unsubscribing stops it;
 * a throwing handler does not stop the others. Redis runs as a real redis-server; the IPC bus
 * runs in real node:cluster workers relayed by this process as the primary.
 */
import assert from 'node:assert/strict';
import cluster, { type Worker } from 'node:cluster';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { LocalBus } from '../../src/cluster/local-bus.js';
import { RedisBus } from '../../src/cluster/redis-bus.js';
import { BusRelay } from '../../src/cluster/ipc-bus.js';
import { AnswerRouter, DEFAULT_MAX_FORWARD_BYTES } from '../../src/cluster/answers.js';
import { DEFAULT_MAX_BODY_BYTES } from '../../src/server/protocol.js';
import { onTopic, publishTopic } from '../../src/cluster/topics.js';
import type { MessageBus } from '../../src/cluster/bus.js';
import { Redis } from 'ioredis';
import { skipWithout, startRedis, type Service } from '../helpers/services.js';

const until = async (cond: () => boolean, ms = 5000): Promise<void> => {
  const start = Date.now();
  while (!cond()) {
    if (Date.now() - start > ms) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 5));
  }
};

describe('local bus', () => {
  it('delivers to every handler once, a copy, in order; unsubscribe stops it', async () => {
    const errors: unknown[] = [];
    const bus = new LocalBus(undefined, (e) => errors.push(e));
    const got: unknown[] = [];
    const off = bus.subscribe('list_changed', (d) => got.push(d));
    bus.subscribe('list_changed', () => {
      throw new Error('boom');
    });
    const payload = { kinds: ['tools'] };
    bus.publish('list_changed', payload);
    bus.publish('list_changed', { kinds: ['prompts'] });
    await until(() => got.length === 2);
    assert.deepEqual(got, [{ kinds: ['tools'] }, { kinds: ['prompts'] }]);
    assert.notEqual(got[0], payload);
    assert.equal(errors.length, 2);
    off();
    bus.publish('list_changed', { kinds: ['tools'] });
    await new Promise((r) => setTimeout(r, 20));
    assert.equal(got.length, 2);
    assert.throws(() => bus.publish('bad channel!', {}), /bad bus channel/);
  });

  it('typed topics drop payloads of the wrong shape', async () => {
    const bus = new LocalBus();
    const got: string[] = [];
    onTopic(bus, 'resource_updated', (p) => got.push(p.uri));
    bus.publish('resource_updated', { url: 'x' });
    publishTopic(bus, 'resource_updated', { uri: 'note://1' });
    await until(() => got.length === 1);
    await new Promise((r) => setTimeout(r, 20));
    assert.deepEqual(got, ['note://1']);
  });
});

describe('redis bus', { skip: skipWithout('redis-server') }, () => {
  let redis: Service;
  const buses: MessageBus[] = [];
  before(async () => {
    redis = await startRedis();
  });
  after(async () => {
    await Promise.all(buses.map((b) => b.close()));
    await redis?.stop();
  });
  const open = async (prefix = 'moonhub:t') => {
    const b = await RedisBus.open({ url: redis.url, prefix });
    buses.push(b);
    return b;
  };

  it('reaches the other instance once and the publisher once, in order', async () => {
    const [a, b] = [await open(), await open()];
    const atA: unknown[] = [];
    const atB: [unknown, string][] = [];
    a.subscribe('resource_updated', (d) => atA.push(d));
    b.subscribe('resource_updated', (d, origin) => atB.push([d, origin]));
    await Promise.all([(a as RedisBus).ready(), (b as RedisBus).ready()]);
    for (let i = 0; i < 50; i++) a.publish('resource_updated', { uri: `u${i}` });
    await until(() => atB.length === 50 && atA.length === 50);
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(atA.length, 50);
    assert.equal(atB.length, 50);
    assert.deepEqual(
      atB.map(([d]) => (d as { uri: string }).uri),
      Array.from({ length: 50 }, (_, i) => `u${i}`),
    );
    assert.equal(atB[0]![1], a.instanceId);
  });

  it('keeps hubs with other prefixes apart', async () => {
    const [a, other] = [await open('moonhub:one'), await open('moonhub:two')];
    const got: unknown[] = [];
    other.subscribe('revoked', (d) => got.push(d));
    await (other as RedisBus).ready();
    a.publish('revoked', { session_uuid: 'x' });
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(got.length, 0);
  });

  it('routes a client answer that lands on another instance to the waiting call', async () => {
    const [a, b] = [await open('moonhub:ans'), await open('moonhub:ans')];
    const key = Buffer.alloc(32, 7);
    const routerA = new AnswerRouter(a, {}, key);
    const routerB = new AnswerRouter(b, { maxForwardBytes: 100 }, key);
    const crossed: unknown[] = [];
    a.subscribe(`answers.${a.instanceId}`, (d) => crossed.push(d));
    await Promise.all([(a as RedisBus).ready(), (b as RedisBus).ready()]);
    const { id, answer } = routerA.open('sess-1');
    assert.match(id, new RegExp(`^moonhub-${a.instanceId}-\\d+-[A-Za-z0-9_-]{22}$`));
    // Another session's answer with the right id does not check where it lands.
    assert.equal(routerB.deliver(id, 'sess-2', { result: { action: 'decline' } }), 'unknown');
    assert.equal(routerB.deliver(id, 'sess-1', { result: { action: 'accept' } }), 'forwarded');
    assert.deepEqual((await answer).message, { result: { action: 'accept' } });
    // Sent again, it does not cross again.
    assert.equal(routerB.deliver(id, 'sess-1', { result: { action: 'accept' } }), 'unknown');
    assert.equal(routerA.size, 0);
    // Forged: the old shape, a made-up tag, another spelling of the tag, another key's tag.
    const [, n, tag] = /-(\d+)-(.{22})$/.exec(id)!;
    const other = new AnswerRouter(b, {}, Buffer.alloc(32, 8));
    const opened = other.open('sess-1');
    opened.answer.catch(() => {});
    const foreign = opened.id;
    for (const forged of [
      `moonhub-${a.instanceId}-${n}`,
      `moonhub-${a.instanceId}-${n}-${'A'.repeat(22)}`,
      `moonhub-${a.instanceId}-${n}-${tag!.slice(0, 21)}${tag!.endsWith('A') ? 'B' : 'A'}`,
      foreign.replace(b.instanceId, a.instanceId),
      'moonhub-zz!-1',
      42,
    ])
      assert.equal(routerB.deliver(forged, 'sess-1', {}), 'unknown', String(forged));
    // Too large to forward: the waiting call gets an error naming the bound at once.
    const big = routerA.open('sess-1');
    assert.equal(
      routerB.deliver(big.id, 'sess-1', { result: { text: 'x'.repeat(200) } }),
      'forwarded',
    );
    const got = (await big.answer).message as { error?: { message: string } };
    assert.match(got.error?.message ?? '', /larger than 100 bytes.*max_forwarded_answer_bytes/);
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(crossed.length, 2, 'one honest answer and one error crossed');
    // A new key (Redis lost it): new ids use it, the previous key's still check.
    const before = routerA.open('sess-1');
    routerA.rekey(Buffer.alloc(32, 9));
    routerB.rekey(Buffer.alloc(32, 9));
    const after = routerA.open('sess-1');
    assert.equal(routerB.deliver(before.id, 'sess-1', { result: {} }), 'forwarded');
    assert.equal(routerB.deliver(after.id, 'sess-1', { result: {} }), 'forwarded');
    await Promise.all([before.answer, after.answer]);
    const timed = new AnswerRouter(a, { timeoutMs: 50 });
    await assert.rejects(timed.open('s').answer, /no answer from the client in 50 ms/);
    const full = new AnswerRouter(a, { maxPending: 1 });
    void full.open('s').answer.catch(() => {});
    assert.throws(() => full.open('s'), /too many requests waiting/);
    for (const r of [routerA, routerB, other, timed, full]) r.close();
  });

  it('publishConfirmed resolves once Redis took the message; a lost subscriber is a gap, then live again', async () => {
    const [a, b] = [await open('moonhub:gap'), await open('moonhub:gap')];
    const got: unknown[] = [];
    b.subscribe('revoked', (d) => got.push(d));
    let gaps = 0;
    b.onGap(() => gaps++);
    await b.ready();
    assert.equal(b.live, true);
    await a.publishConfirmed('revoked', { session_uuid: 'one' });
    await until(() => got.length === 1);
    // Redis drops the subscriber connection: messages meanwhile are lost, so caches are told.
    const admin = new Redis(redis.url);
    try {
      await admin.client('KILL', 'TYPE', 'pubsub');
    } finally {
      admin.disconnect();
    }
    await until(() => gaps >= 1);
    // ioredis reconnects and resubscribes; the bus says so (a second gap: anything missed).
    await until(() => b.live && gaps >= 2, 10_000);
    await a.publishConfirmed('revoked', { session_uuid: 'two' });
    await until(() => got.length === 2);
    assert.deepEqual(got[1], { session_uuid: 'two' });
  });

  it('says clearly when Redis cannot be reached', async () => {
    await assert.rejects(
      RedisBus.open({ url: 'redis://:secret@127.0.0.1:1', prefix: 'x' }),
      (err: Error) =>
        /cannot reach Redis at redis:\/\/:\*\*\*@127\.0\.0\.1:1/.test(err.message) &&
        !err.message.includes('secret'),
    );
    await assert.rejects(
      RedisBus.open({ url: 'http://x', prefix: 'x' }),
      /redis:\/\/ or rediss:\/\//,
    );
  });
});

/** `n` workers running the IPC fixture, their bus messages relayed by this primary. */
function forkRelayed(n: number): Worker[] {
  cluster.setupPrimary({
    exec: join(dirname(fileURLToPath(import.meta.url)), 'ipc-worker.fixture.js'),
    silent: true,
  });
  const workers = Array.from({ length: n }, () => cluster.fork());
  const relay = new BusRelay(() => workers);
  for (const w of workers) relay.add(w);
  return workers;
}

describe('ipc bus between node:cluster workers', () => {
  it('relays through the primary to every other worker, exactly once', async () => {
    const workers = forkRelayed(3);
    const reports = new Map<number, string[]>();
    for (const w of workers)
      w.on('message', (m: { report?: string[] }) => {
        if (m.report) reports.set(w.id, m.report);
      });
    await Promise.all(
      workers.map(
        (w) => new Promise((r) => w.on('message', (m: { ready?: boolean }) => m.ready && r(0))),
      ),
    );
    workers[0]!.send({ go: 3 });
    await until(() => reports.size === 3, 10_000);
    for (const w of workers)
      assert.deepEqual(reports.get(w.id), ['n0', 'n1', 'n2'], `worker ${w.id}`);
    await Promise.all(workers.map((w) => new Promise((r) => (w.once('exit', r), w.kill()))));
  });

  it("sends one turn's messages as one IPC message each way, in order", async () => {
    const workers = forkRelayed(2);
    const reports = new Map<number, string[]>();
    // IPC messages carrying bus envelopes, as the primary receives them from the publisher.
    let fromPublisher = 0;
    for (const w of workers)
      w.on('message', (m: { report?: string[]; moonhubBus?: 1; moonhubBusBatch?: unknown[] }) => {
        if (m.report) reports.set(w.id, m.report);
        if (w === workers[0] && (m.moonhubBus === 1 || Array.isArray(m.moonhubBusBatch)))
          fromPublisher++;
      });
    await Promise.all(
      workers.map(
        (w) => new Promise((r) => w.on('message', (m: { ready?: boolean }) => m.ready && r(0))),
      ),
    );
    try {
      const n = 500;
      workers[1]!.send({ expect: n });
      workers[0]!.send({ go: n });
      await until(() => reports.size === 2, 10_000);
      const expected = Array.from({ length: n }, (_, i) => `n${i}`);
      for (const w of workers) assert.deepEqual(reports.get(w.id), expected, `worker ${w.id}`);
      // One message per 256 published in the turn; before, one per message (500).
      assert.equal(fromPublisher, Math.ceil(n / 256));
    } finally {
      await Promise.all(workers.map((w) => new Promise((r) => (w.once('exit', r), w.kill()))));
    }
  });

  it('publishConfirmed resolves once the primary relayed the message to the others', async () => {
    const workers = forkRelayed(2);
    const reports = new Map<number, string[]>();
    let confirmed: { confirmed: boolean; error?: string } | undefined;
    for (const w of workers)
      w.on('message', (m: { report?: string[]; confirmed?: boolean; error?: string }) => {
        if (m.report) reports.set(w.id, m.report);
        if (typeof m.confirmed === 'boolean') confirmed = m as { confirmed: boolean };
      });
    await Promise.all(
      workers.map(
        (w) => new Promise((r) => w.on('message', (m: { ready?: boolean }) => m.ready && r(0))),
      ),
    );
    for (const w of workers) w.send({ expect: 1 });
    workers[0]!.send({ confirm: true });
    await until(() => confirmed !== undefined && reports.size === 2, 10_000);
    assert.deepEqual(confirmed, { confirmed: true });
    for (const w of workers) assert.deepEqual(reports.get(w.id), ['confirmed'], `worker ${w.id}`);
    await Promise.all(workers.map((w) => new Promise((r) => (w.once('exit', r), w.kill()))));
  });
});

describe('client answers forwarded between processes', () => {
  it('by default forward as much as one process accepts in a body', () => {
    // A client must not see a smaller limit because the hub runs several processes.
    assert.equal(DEFAULT_MAX_FORWARD_BYTES, DEFAULT_MAX_BODY_BYTES);
  });
});
