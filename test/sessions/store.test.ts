/**
 * The sessions database: tokens shown once and stored only as hashes, verification bound to the
 * hub id and refused after revocation, and changes made through one connection (another process,
 * say the CLI) seen by another at once.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { SessionStore } from '../../src/sessions/store.js';
import { parseToken } from '../../src/sessions/tokens.js';

const dataDir = () => join(mkdtempSync(join(tmpdir(), 'moonhub-store-')), 'data');

describe('session store', () => {
  it('stores a hash, never the token, in a folder only its owner can read', () => {
    const dir = dataDir();
    const store = SessionStore.open(dir);
    const { record, token } = store.create({ hub_id: 'h', agent: 'a', target: 't', name: 'n' });
    assert.match(token, /^mhs_[A-Za-z0-9_-]{16}_[A-Za-z0-9_-]{43}$/);
    assert.equal(record.agent, 'a');
    assert.equal(record.role, 'agent');
    store.close();
    const secret = parseToken(token)!.secret;
    for (const f of ['sessions.db', 'sessions.db-wal']) {
      const p = join(dir, f);
      if (!existsSync(p)) continue;
      const bytes = readFileSync(p);
      assert.equal(bytes.includes(secret), false, `${f} holds the secret`);
      assert.equal(bytes.includes(token), false, `${f} holds the token`);
    }
    assert.equal(statSync(dir).mode & 0o777, 0o700);
    assert.equal(statSync(join(dir, 'sessions.db')).mode & 0o777, 0o600);
  });

  it('verifies a token for its own hub only, and not once revoked', () => {
    const store = SessionStore.open(dataDir());
    const { record, token } = store.create({ hub_id: 'h1', agent: 'a' });
    assert.equal(store.verify(token, 'h1')?.session_uuid, record.session_uuid);
    assert.equal(store.verify(token, 'h2'), undefined);
    const last = token.at(-1) === 'A' ? 'B' : 'A';
    assert.equal(store.verify(token.slice(0, -1) + last, 'h1'), undefined);
    for (const junk of ['', 'mhs_', 'Bearer x', token + 'x', token.replace('mhs_', 'mhx_')])
      assert.equal(store.verify(junk, 'h1'), undefined, junk);
    assert.equal(store.revoke(record.session_uuid, 'h2'), false, 'another hub cannot revoke it');
    assert.equal(store.revoke(record.session_uuid), true);
    assert.equal(store.revoke(record.session_uuid), false, 'already revoked');
    assert.equal(store.verify(token, 'h1'), undefined);
    assert.ok(store.get(record.session_uuid)?.revoked_at);
    store.close();
  });

  it('lists sessions per hub without anything secret', () => {
    const store = SessionStore.open(dataDir());
    store.create({ hub_id: 'h1', agent: 'a' });
    store.create({ hub_id: 'h2', agent: 'b' });
    store.create({ hub_id: 'h1', role: 'admin' });
    assert.deepEqual(
      store.list('h1').map((r) => r.agent ?? r.role),
      ['a', 'admin'],
    );
    assert.equal(store.list().length, 3);
    assert.doesNotMatch(JSON.stringify(store.list()), /hash|selector|mhs_/);
    store.close();
  });

  it("sees another connection's changes at once, and its version moves with them", () => {
    const dir = dataDir();
    const hub = SessionStore.open(dir);
    const cli = SessionStore.open(dir);
    const v0 = hub.version();
    const { record, token } = cli.create({ hub_id: 'h', agent: 'a' });
    assert.notEqual(hub.version(), v0);
    assert.equal(hub.verify(token, 'h')?.session_uuid, record.session_uuid);
    const v1 = hub.version();
    cli.revoke(record.session_uuid);
    assert.notEqual(hub.version(), v1);
    assert.equal(hub.verify(token, 'h'), undefined);
    hub.close();
    cli.close();
  });
});
