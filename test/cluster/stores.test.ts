/**
 * The shared session records, event logs and token buckets, one contract for both carriers:
 * SQLite in a data folder (the workers of one machine) and a real redis-server. Bounds hold
 * (sessions, subscriptions, events), idle sessions expire, concurrent changes of different
 * fields are all kept, and buckets refill and expire.
 */
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { openClusterDb } from '../../src/cluster/embedded-db.js';
import { EmbeddedRecords } from '../../src/cluster/embedded-records.js';
import { RedisRecords } from '../../src/cluster/redis-records.js';
import {
  EmbeddedCounters,
  LocalCounters,
  type SharedCounters,
} from '../../src/cluster/counters.js';
import { RedisCounters } from '../../src/cluster/redis-counters.js';
import { closeRedis, connectRedis, type Redis } from '../../src/cluster/redis.js';
import type {
  ProtocolSessionRecord,
  RecordLimits,
  SessionRecordStore,
} from '../../src/cluster/session-records.js';
import { skipWithout, startRedis, type Service } from '../helpers/services.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function rec(id: string, principal = 'session:p1'): ProtocolSessionRecord {
  const now = Date.now();
  return {
    id,
    protocolVersion: '2025-11-25',
    principal,
    subscriptions: [],
    createdAt: now,
    lastSeen: now,
    clientCapabilities: { elicitation: {} },
  };
}

type Open = (limits?: Partial<RecordLimits>) => SessionRecordStore;

function recordContract(name: string, open: () => Open): void {
  describe(`${name} session records`, () => {
    it('stores, changes and deletes a session; concurrent field changes all land', async () => {
      const store = open()();
      assert.equal(await store.create(rec('s1')), true);
      const got = await store.get('s1');
      assert.equal(got?.protocolVersion, '2025-11-25');
      assert.equal(got?.principal, 'session:p1');
      assert.deepEqual(got?.clientCapabilities, { elicitation: {} });
      await Promise.all([
        store.update('s1', { logLevel: 'debug' }),
        store.subscribe('s1', 'note://1'),
        store.update('s1', { streamOwner: 'abc' }),
        store.subscribe('s1', 'note://2'),
      ]);
      const after = await store.get('s1');
      assert.equal(after?.logLevel, 'debug');
      assert.equal(after?.streamOwner, 'abc');
      assert.deepEqual(after?.subscriptions.sort(), ['note://1', 'note://2']);
      await store.update('s1', { streamOwner: null });
      assert.equal((await store.get('s1'))?.streamOwner, undefined);
      assert.equal(await store.unsubscribe('s1', 'note://1'), true);
      assert.deepEqual((await store.get('s1'))?.subscriptions, ['note://2']);
      assert.deepEqual(await store.sessionsOf('session:p1'), ['s1']);
      assert.equal(await store.touch('s1'), true);
      assert.equal(await store.delete('s1'), true);
      assert.equal(await store.get('s1'), undefined);
      assert.equal(await store.update('s1', { logLevel: 'info' }), false);
      assert.equal(await store.subscribe('s1', 'x'), 'gone');
      assert.deepEqual(await store.sessionsOf('session:p1'), []);
    });

    it('bounds sessions and subscriptions; an idle session is forgotten', async () => {
      const store = open()({ maxSessions: 3, maxSubscriptions: 2, idleTimeoutMs: 300 });
      for (const id of ['a', 'b', 'c']) assert.equal(await store.create(rec(id)), true);
      assert.equal(await store.create(rec('d')), false, 'the fourth session is refused');
      assert.equal(await store.subscribe('a', 'u1'), 'ok');
      assert.equal(await store.subscribe('a', 'u2'), 'ok');
      assert.equal(await store.subscribe('a', 'u1'), 'ok', 'a repeat is not a new one');
      assert.equal(await store.subscribe('a', 'u3'), 'full');
      await sleep(400);
      assert.equal(await store.get('a'), undefined, 'idle past the timeout');
      assert.equal(await store.create(rec('d')), true, 'idle ones make room');
    });

    it('admits under a per-principal cap and evicts the oldest idle session, never an active one', async () => {
      const store = open()({ maxSessions: 4 });
      const caps = { perPrincipal: 2, evictIdleMs: 200 };
      // Silent for 10 min: past the evict age of either carrier (Redis: twice its touch interval,
      // 3 min at the default idle timeout), so the first to give way.
      const old = (id: string, p: string) => ({ ...rec(id, p), lastSeen: Date.now() - 600_000 });
      assert.deepEqual(await store.admit(old('a1', 'A'), caps), { ok: true, evicted: [] });
      assert.deepEqual(await store.admit(rec('a2', 'A'), caps), { ok: true, evicted: [] });
      assert.deepEqual(await store.admit(rec('a3', 'A'), caps), { ok: true, evicted: ['a1'] });
      assert.equal(await store.get('a1'), undefined, 'the idle one of the principal ended');
      assert.deepEqual(await store.admit(rec('a4', 'A'), caps), {
        ok: false,
        limit: 'sessions_per_principal',
      });
      assert.deepEqual((await store.sessionsOf('A')).sort(), ['a2', 'a3']);
      // Another principal is not locked out by A at its cap.
      assert.deepEqual(await store.admit(rec('b1', 'B'), caps), { ok: true, evicted: [] });
      assert.deepEqual(await store.admit(old('b2', 'B'), caps), { ok: true, evicted: [] });
      // The store is full: the oldest idle session of anybody (B's b2) makes room for C.
      assert.deepEqual(await store.admit(rec('c1', 'C'), caps), { ok: true, evicted: ['b2'] });
      assert.deepEqual(await store.admit(rec('d1', 'D'), caps), { ok: false, limit: 'sessions' });
      assert.equal(await store.delete('a2'), true);
      assert.deepEqual(await store.admit(rec('a5', 'A'), caps), { ok: true, evicted: [] });
    });

    it('replays a stream after an event id, says when a bound cut a gap, forgets it', async () => {
      const store = open()({ maxEventsPerStream: 5, maxEventBytes: 100 });
      const stream = 'st' + Math.random().toString(36).slice(2);
      assert.equal(await store.eventsAfter(stream, 0), undefined);
      for (let seq = 0; seq <= 4; seq++) await store.appendEvent(stream, seq, `{"n":${seq}}`);
      assert.deepEqual(await store.eventsAfter(stream, 2), {
        complete: true,
        head: '{"n":0}',
        events: [
          { seq: 3, data: '{"n":3}' },
          { seq: 4, data: '{"n":4}' },
        ],
      });
      await store.appendEvent(stream, 5, 'x'.repeat(101));
      const gap = await store.eventsAfter(stream, 4);
      assert.equal(gap?.complete, false, 'the oversized event was not kept');
      for (let seq = 6; seq <= 12; seq++) await store.appendEvent(stream, seq, `{"n":${seq}}`);
      const cut = await store.eventsAfter(stream, 2);
      assert.equal(cut?.complete, false);
      assert.deepEqual(
        cut?.events.map((e) => e.seq),
        [8, 9, 10, 11, 12],
      );
      assert.equal((await store.eventsAfter(stream, 9))?.complete, true);
      await store.dropStream(stream);
      assert.equal(await store.eventsAfter(stream, 0), undefined);
      // A later event of a stream the log no longer holds does not bring a part of it back.
      await store.appendEvent(stream, 13, '{"n":13}');
      assert.equal(await store.eventsAfter(stream, 0), undefined);
      await assert.rejects(store.eventsAfter('../x y', 0), /bad stream id/);
    });

    it('bounds the log per principal and in all: the streams written least recently go whole', async () => {
      const store = open()({
        eventLogBytesPerPrincipal: 40 * 1024,
        eventLogBytes: 60 * 1024,
        eventTtlMs: 1500,
      });
      const tag = Math.random().toString(36).slice(2);
      const ev = `"${'e'.repeat(4000)}"`;
      // About 9.2 KiB each: two 4 KB events, the priming one, and what each counts beyond.
      const write = async (name: string, principal: string) => {
        await store.appendEvent(`${name}${tag}`, 0, '{}', principal);
        await store.appendEvent(`${name}${tag}`, 1, ev, principal);
        await store.appendEvent(`${name}${tag}`, 2, ev, principal);
        await sleep(3); // one stream after another, as the log orders them
      };
      const kept = async (names: string[]) => {
        const out: string[] = [];
        for (const n of names)
          if ((await store.eventsAfter(`${n}${tag}`, 0)) !== undefined) out.push(n);
        return out;
      };
      for (const n of ['a1', 'a2', 'a3', 'a4']) await write(n, 'session:A');
      assert.deepEqual(await kept(['a1', 'a2', 'a3', 'a4']), ['a1', 'a2', 'a3', 'a4']);
      await write('a5', 'session:A');
      assert.deepEqual(await kept(['a1', 'a2', 'a3', 'a4', 'a5']), ['a2', 'a3', 'a4', 'a5']);
      // A later event of the forgotten stream is not kept: resuming it is a 404, not a part.
      await store.appendEvent(`a1${tag}`, 3, ev, 'session:A');
      assert.equal(await store.eventsAfter(`a1${tag}`, 0), undefined);
      // Another principal's streams fit beside A's until the whole log is full: then the
      // least recently written of anybody's go first.
      for (const n of ['b1', 'b2']) await write(n, 'session:B');
      assert.deepEqual(await kept(['a2', 'a3', 'b1', 'b2']), ['a2', 'a3', 'b1', 'b2']);
      await write('b3', 'session:B');
      assert.deepEqual(await kept(['a2', 'a3', 'a4', 'a5', 'b1', 'b2', 'b3']), [
        'a3',
        'a4',
        'a5',
        'b1',
        'b2',
        'b3',
      ]);
      // Streams past their TTL give their bytes back: six new streams fit without eviction.
      await sleep(1600);
      for (const n of ['c1', 'c2', 'c3', 'c4']) await write(n, 'session:C');
      for (const n of ['d1', 'd2']) await write(n, 'session:D');
      assert.deepEqual(await kept(['a5', 'b3', 'c1', 'c2', 'c3', 'c4', 'd1', 'd2']), [
        'c1',
        'c2',
        'c3',
        'c4',
        'd1',
        'd2',
      ]);
      await store.dropStream(`c1${tag}`);
      assert.equal(await store.eventsAfter(`c1${tag}`, 0), undefined);
    });

    it('an instance is alive while it refreshes its liveness, dead once its TTL ran out', async () => {
      const store = open()();
      const me = 'i' + Math.random().toString(36).slice(2);
      assert.equal(await store.isAlive(me), false, 'never seen');
      await store.markAlive(me, 2000);
      assert.equal(await store.isAlive(me), true);
      await sleep(1200);
      await store.markAlive(me, 2000);
      await sleep(1200);
      assert.equal(await store.isAlive(me), true, 'refreshed in time');
      await sleep(1500);
      assert.equal(await store.isAlive(me), false, 'no refresh for longer than the TTL');
      assert.equal(await store.isAlive('other'), false);
    });
  });
}

function counterContract(name: string, open: () => SharedCounters): void {
  it(`${name} token bucket: capacity, refusal with retry-after, refill`, async () => {
    const c = open();
    const rule = { capacity: 3, refillPerSecond: 20 };
    const key = 'k' + Math.random();
    const results = await Promise.all([1, 2, 3, 4].map(() => c.take(key, rule)));
    assert.equal(results.filter((r) => r.allowed).length, 3);
    const refused = results.find((r) => !r.allowed)!;
    assert.ok(refused.retryAfterMs > 0 && refused.retryAfterMs <= 50, `${refused.retryAfterMs}`);
    await sleep(120);
    assert.equal((await c.take(key, rule)).allowed, true);
    assert.equal((await c.take('other' + key, rule)).allowed, true, 'another key has its own');
    await assert.rejects(c.take(key, rule, 4), /costs from 0 to the capacity/);
  });
}

describe('embedded (SQLite) carrier', () => {
  const dir = mkdtempSync(join(tmpdir(), 'moonhub-cluster-'));
  recordContract('embedded', () => (limits) => {
    // A fresh folder each time: the bounds count every session in the file.
    const db = openClusterDb(mkdtempSync(join(tmpdir(), 'moonhub-cluster-')));
    return new EmbeddedRecords(db, limits);
  });
  counterContract('embedded', () => new EmbeddedCounters(openClusterDb(dir)));
  counterContract('local', () => new LocalCounters());

  it('two connections to one file (two workers) see each other at once', async () => {
    const one = new EmbeddedRecords(openClusterDb(dir));
    const two = new EmbeddedRecords(openClusterDb(dir));
    await one.create(rec('shared'));
    assert.equal(await two.subscribe('shared', 'note://x'), 'ok');
    assert.deepEqual((await one.get('shared'))?.subscriptions, ['note://x']);
    const c1 = new EmbeddedCounters(openClusterDb(dir));
    const c2 = new EmbeddedCounters(openClusterDb(dir));
    const rule = { capacity: 4, refillPerSecond: 0.001 };
    const r = await Promise.all([c1, c2, c1, c2, c1, c2].map((c) => c.take('global', rule)));
    assert.equal(r.filter((x) => x.allowed).length, 4, 'one bucket across both');
  });

  it('the local buckets forget the least recently used key past their bound', async () => {
    const c = new LocalCounters(2);
    const rule = { capacity: 1, refillPerSecond: 0.001 };
    await c.take('a', rule);
    await c.take('b', rule);
    await c.take('c', rule);
    assert.equal((await c.take('a', rule)).allowed, true, 'a was forgotten, so it is full again');
    assert.equal((await c.take('c', rule)).allowed, false);
  });
});

describe('redis carrier', { skip: skipWithout('redis-server') }, () => {
  let redis: Service;
  const clients: Redis[] = [];
  before(async () => {
    redis = await startRedis();
  });
  after(async () => {
    await Promise.all(clients.map((c) => closeRedis(c)));
    await redis?.stop();
  });
  const client = async () => {
    const c = await connectRedis(redis.url, { name: 'test' });
    clients.push(c);
    return c;
  };
  let n = 0;
  recordContract('redis', () => {
    const c = clients[0]!;
    return (limits) => new RedisRecords(c, `t${++n}`, limits);
  });
  before(async () => void (await client()));
  counterContract('redis', () => new RedisCounters(clients[0]!, 'tc'));

  it('expires keys: sessions after idle, buckets once full again', async () => {
    const c = clients[0]!;
    const store = new RedisRecords(c, 'ttl', { idleTimeoutMs: 5000 });
    await store.create(rec('x'));
    const ttl = await c.pttl('ttl:ps:x');
    assert.ok(ttl > 0 && ttl <= 5000, `session TTL ${ttl}`);
    const counters = new RedisCounters(c, 'ttl');
    await counters.take('b', { capacity: 2, refillPerSecond: 1 });
    const bttl = await c.pttl('ttl:bucket:b');
    assert.ok(bttl > 0 && bttl <= 3000, `bucket TTL ${bttl}`);
  });

  it('two clients (two instances) share one bucket and one session', async () => {
    const [a, b] = [clients[0]!, await client()];
    const rule = { capacity: 5, refillPerSecond: 0.001 };
    const ca = new RedisCounters(a, 'g');
    const cb = new RedisCounters(b, 'g');
    const r = await Promise.all(
      Array.from({ length: 10 }, (_, i) => (i % 2 ? ca : cb).take('k', rule)),
    );
    assert.equal(r.filter((x) => x.allowed).length, 5);
    const ra = new RedisRecords(a, 'g');
    const rb = new RedisRecords(b, 'g');
    await ra.create(rec('s'));
    await rb.update('s', { logLevel: 'warning' });
    assert.equal((await ra.get('s'))?.logLevel, 'warning');
  });
});
