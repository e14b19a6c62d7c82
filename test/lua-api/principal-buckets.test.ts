/**
 * The per-principal buckets of a plugin's message rate (plugin_limits.messages_per_second_per_principal):
 * the table stays bounded however many principals send, and a bucket idle for a second (full
 * again) is forgotten when a new principal comes. The end-to-end behaviour (B's messages arrive
 * while A floods) is test/reliability/plugin-message-shares.test.ts.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MAX_PRINCIPAL_BUCKETS, PrincipalBuckets } from '../../src/lua-api/principal-buckets.js';

describe('PrincipalBuckets', () => {
  it('keeps at most MAX_PRINCIPAL_BUCKETS, least recently used dropped', () => {
    const b = new PrincipalBuckets(50);
    for (let i = 0; i < 3 * MAX_PRINCIPAL_BUCKETS; i++) b.refill(`p${i}`, 0);
    assert.equal(b.size, MAX_PRINCIPAL_BUCKETS);
  });

  it('forgets buckets idle for a second when a new principal comes', () => {
    const b = new PrincipalBuckets(50);
    for (let i = 0; i < 100; i++) b.refill(`p${i}`, 0);
    b.refill('p99', 500);
    b.refill('new', 1200);
    // p0..p98 were idle 1.2 s (full again: forgotten); p99 spoke 0.7 s ago.
    assert.equal(b.size, 2);
  });

  it('refills a bucket at its rate, up to one second of it', () => {
    const b = new PrincipalBuckets(50);
    const a = b.refill('a', 0);
    a.tokens = 0;
    assert.equal(b.refill('a', 100).tokens, 5);
    b.refill('other', 150);
    assert.equal(b.refill('a', 5000).tokens, 50);
  });
});
