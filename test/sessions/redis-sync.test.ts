/**
 * Sessions replicated through a real redis-server: a session made on one hub's database is
 * verified by another's; a revocation on either reaches the other at once (no poll interval
 * between); a hub that joins later pulls what exists and pushes what it had; a revoked session
 * never comes back; garbage on the channel is reported and ignored.
 */
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { SessionStore } from '../../src/sessions/store.js';
import { SessionSync } from '../../src/sessions/redis-sync.js';
import { connectRedis, closeRedis } from '../../src/cluster/redis.js';
import { skipWithout, startRedis, type Service } from '../helpers/services.js';

const dataDir = () => join(mkdtempSync(join(tmpdir(), 'moonhub-sync-')), 'data');

const until = async (cond: () => boolean, ms: number, what: string): Promise<number> => {
  const start = Date.now();
  while (!cond()) {
    if (Date.now() - start > ms) throw new Error(`timed out after ${ms} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 2));
  }
  return Date.now() - start;
};

describe('sessions shared through Redis', { skip: skipWithout('redis-server') }, () => {
  let redis: Service;
  const closers: (() => Promise<void> | void)[] = [];
  before(async () => {
    redis = await startRedis();
  });
  after(async () => {
    for (const c of closers.reverse()) await c();
    await redis?.stop();
  });

  const hub = async (prefix: string, errors: unknown[] = []) => {
    const store = SessionStore.open(dataDir());
    const sync = await SessionSync.start(store, {
      url: redis.url,
      prefix,
      onError: (e) => errors.push(e),
    });
    closers.push(
      () => sync.close(),
      () => store.close(),
    );
    return { store, sync };
  };

  it('a session made on one hub works on the other; a revocation anywhere applies everywhere', async () => {
    const a = await hub('moonhub:h');
    const b = await hub('moonhub:h');
    const { record, token } = a.store.create({ hub_id: 'h', agent: 'x' });
    await until(() => b.store.verify(token, 'h') !== undefined, 2000, 'replicated');
    const before = b.store.version();
    assert.equal(b.store.revoke(record.session_uuid, 'h'), true);
    const ms = await until(() => a.store.verify(token, 'h') === undefined, 1000, 'revoked on a');
    assert.ok(ms < 1000, `revocation took ${ms} ms`);
    assert.ok(a.store.get(record.session_uuid)?.revoked_at !== undefined);
    assert.notEqual(b.store.version(), before, 'version moves (the poll that ends streams)');
  });

  it('a hub joining later pulls existing sessions and pushes its own; revoked stays revoked', async () => {
    const a = await hub('moonhub:late');
    const { token: ta } = a.store.create({ hub_id: 'late', agent: 'x' });
    // A hub whose database had a session (and a revocation) before it joined the cluster.
    const lonely = SessionStore.open(dataDir());
    const own = lonely.create({ hub_id: 'late', agent: 'y' });
    const gone = lonely.create({ hub_id: 'late', agent: 'z' });
    lonely.revoke(gone.record.session_uuid);
    const sync = await SessionSync.start(lonely, { url: redis.url, prefix: 'moonhub:late' });
    closers.push(
      () => sync.close(),
      () => lonely.close(),
    );
    assert.ok(lonely.verify(ta, 'late'), 'pulled at start');
    await until(() => a.store.verify(own.token, 'late') !== undefined, 2000, 'pushed at start');
    await until(() => a.store.get(gone.record.session_uuid) !== undefined, 2000, 'revoked pushed');
    assert.equal(a.store.verify(gone.token, 'late'), undefined);
    // An old, unrevoked copy of the row cannot bring the session back.
    const row = lonely.exportRows(gone.record.session_uuid)[0]!;
    const r = await connectRedis(redis.url, { name: 'test' });
    await r.publish('moonhub:late:sessions:changed', JSON.stringify({ ...row, revoked_at: null }));
    await closeRedis(r);
    await new Promise((res) => setTimeout(res, 100));
    assert.equal(a.store.verify(gone.token, 'late'), undefined);
  });

  it('reports and ignores garbage on the channel; other hubs are kept apart', async () => {
    const errors: unknown[] = [];
    const a = await hub('moonhub:g', errors);
    const other = await hub('moonhub:other');
    const r = await connectRedis(redis.url, { name: 'test' });
    await r.publish('moonhub:g:sessions:changed', 'not json');
    await r.publish('moonhub:g:sessions:changed', JSON.stringify({ uuid: 1 }));
    await closeRedis(r);
    await until(() => errors.length === 2, 2000, 'errors reported');
    const { token } = a.store.create({ hub_id: 'g', agent: 'x' });
    await a.sync.flush();
    await new Promise((res) => setTimeout(res, 100));
    assert.equal(other.store.verify(token, 'g'), undefined, 'another prefix never sees it');
  });
});
