/**
 * The reconnect delays of an upstream connection (upstream/reconnect.ts): failures double from
 * the first delay and start again once connected; floods double a delay of their own that a
 * connect does not reset, until FORGIVE_MS pass without one.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FORGIVE_MS, Reconnect } from '../../src/upstream/reconnect.js';

describe('Reconnect', () => {
  it('doubles the flood delay per flood, keeps it across connects, forgives after FORGIVE_MS', () => {
    let t = 0;
    const r = new Reconnect(250, 30_000, () => t);
    assert.deepEqual([r.flooded(), r.flooded(), r.flooded()], [1000, 2000, 4000]);
    t += 60_000;
    r.connected();
    assert.equal(r.flooded(), 8000, 'a flood within FORGIVE_MS of the last doubles again');
    for (let i = 0; i < 10; i++) r.flooded();
    assert.equal(r.flooded(), 30_000, 'capped at maxBackoffMs');
    t += FORGIVE_MS;
    r.connected();
    assert.equal(r.flooded(), 1000, 'after FORGIVE_MS without a flood it starts again');
  });
});
