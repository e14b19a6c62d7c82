/**
 * The session index on its own: who is evicted for a newcomer (the principal's own oldest idle
 * session at its cap, the oldest idle of anybody in a full store, never an active one or one
 * with a call in flight), idle expiry, and the `limits:` config section that sets the numbers.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { resolveSettings } from '../../src/config/settings.js';
import {
  badRequestId,
  resolveLimits,
  SessionIndex,
  type IndexedSession,
} from '../../src/server/session-limits.js';

function session(id: string, principal: string | undefined, lastSeen: number) {
  return { id, principal, lastSeen, inflight: new Set<number>() } satisfies IndexedSession;
}

describe('SessionIndex', () => {
  const limits = resolveLimits({
    sessionsTotal: 4,
    sessionsPerPrincipal: 2,
    sessionEvictIdleMs: 100,
  });

  it("evicts the principal's own oldest idle session at its cap, never another's", () => {
    const index = new SessionIndex<ReturnType<typeof session>>(limits);
    const b1 = session('b1', 'B', 0);
    const a1 = session('a1', 'A', 10);
    const a2 = session('a2', 'A', 20);
    for (const s of [b1, a1, a2]) index.add(s);
    assert.deepEqual(index.admit('A', 1000), { evict: a1 });
    // Active (spoke within 100 ms): refused, nothing evicted.
    const refused = index.admit('A', 50);
    assert.ok('error' in refused && refused.limit === 'sessions_per_principal');
    assert.match(refused.error.message, /limits\.sessions\.per_principal/);
    // A call in flight spares the oldest; the next idle one goes.
    a1.inflight.add(1);
    assert.deepEqual(index.admit('A', 1000), { evict: a2 });
  });

  it('in a full store evicts the oldest idle session of anybody; a touch moves one back', () => {
    const index = new SessionIndex<ReturnType<typeof session>>(limits);
    const all = ['a1', 'b1', 'c1', 'd1'].map((id, i) => session(id, id[0], i));
    for (const s of all) index.add(s);
    const early = index.admit('E', 50);
    assert.ok('error' in early && early.limit === 'sessions', 'all active: refused');
    index.touch(all[0]!, 5_000);
    assert.deepEqual(index.admit('E', 5_000), { evict: all[1] });
    index.remove(all[1]!);
    assert.deepEqual(index.admit('E', 5_000), { evict: undefined }, 'room again');
  });

  it('expires sessions silent for the idle timeout, sparing calls in flight', () => {
    const index = new SessionIndex<ReturnType<typeof session>>(
      resolveLimits({ sessionIdleMs: 1000 }),
    );
    const old = session('old', 'A', 0);
    const busy = session('busy', 'A', 0);
    busy.inflight.add(1);
    const fresh = session('fresh', 'A', 1500);
    for (const s of [old, busy, fresh]) index.add(s);
    assert.deepEqual([...index.expired(2000)], [old]);
    // A touch within a second of the last move keeps the place but counts as activity.
    index.touch(old, 500);
    assert.deepEqual([...index.expired(1400)], []);
  });

  it('checks request ids: string length, safe integers', () => {
    assert.equal(badRequestId('x'.repeat(256), 256), undefined);
    assert.match(badRequestId('x'.repeat(257), 256)!, /limits\.request_id_length/);
    assert.equal(badRequestId(7, 256), undefined);
    assert.match(badRequestId(1.5, 256)!, /safe integer/);
    assert.match(badRequestId(2 ** 53, 256)!, /safe integer/);
  });
});

describe('limits: in the config', () => {
  const dir = mkdtempSync(join(tmpdir(), 'moonhub-limits-'));
  const write = (text: string) => {
    const p = join(dir, `c${Math.random()}.yaml`);
    writeFileSync(p, text);
    return p;
  };

  it('maps the keys onto the server bounds, the rest keeping their defaults', () => {
    const s = resolveSettings({
      config: write(`limits:
  sessions: { total: 500, per_principal: 50, idle_timeout_ms: 60000, evict_idle_ms: 0 }
  subscriptions: { per_session: 10, uri_length: 512 }
  listens: { per_principal: 2 }
  batch_length: 20
`),
    });
    assert.deepEqual(s.serverLimits, {
      sessionsTotal: 500,
      sessionsPerPrincipal: 50,
      sessionIdleMs: 60000,
      sessionEvictIdleMs: 0,
      subscriptionsPerSession: 10,
      subscriptionUriLength: 512,
      listensPerPrincipal: 2,
      batchLength: 20,
    });
    const all = resolveLimits(s.serverLimits);
    assert.equal(all.listensTotal, 1024);
    assert.equal(all.requestIdLength, 256);
  });

  it('refuses unknown keys and out-of-range values, naming the key', () => {
    assert.throws(
      () => resolveSettings({ config: write('limits: { sessions: { totl: 5 } }\n') }),
      /limits\.sessions\.totl/,
    );
    assert.throws(
      () => resolveSettings({ config: write('limits: { batch_length: 0 }\n') }),
      /limits\.batch_length/,
    );
  });
});
