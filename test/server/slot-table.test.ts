/**
 * SlotTable (src/slot-table.ts), the table of calls in flight keyed by the slot it hands out:
 * size and iteration stay right through churn, slots are reused (the slot list grows only to
 * the most values held at once), and removing a value twice never removes the value that took
 * its slot since.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SlotTable } from '../../src/slot-table.js';

describe('SlotTable', () => {
  it('counts through churn and reuses slots', () => {
    const t = new SlotTable<{ n: number }>();
    const held: [number, { n: number }][] = [];
    let most = 0;
    for (let i = 0; i < 20_000; i++) {
      const v = { n: i };
      held.push([t.add(v), v]);
      if (held.length > 50) {
        const [slot, old] = held.shift()!;
        assert.equal(t.delete(slot, old), true);
      }
      for (const [slot] of held) most = Math.max(most, slot);
    }
    assert.equal(t.size, 50);
    assert.ok(most <= 50, `slots reused: the highest slot was ${most}`);
    assert.deepEqual(
      [...t.values()].map((v) => v.n).sort((a, b) => a - b),
      held.map(([, v]) => v.n).sort((a, b) => a - b),
    );
    assert.deepEqual(
      [...t.entries()].map(([slot, v]) => [slot, v.n]).sort((a, b) => a[0]! - b[0]!),
      held.map(([slot, v]) => [slot, v.n]).sort((a, b) => a[0]! - b[0]!),
    );
  });

  it('a second removal leaves the value now in that slot', () => {
    const t = new SlotTable<{ n: number }>();
    const a = { n: 1 };
    const slot = t.add(a);
    assert.equal(t.delete(slot, a), true);
    const b = { n: 2 };
    assert.equal(t.add(b), slot);
    assert.equal(t.delete(slot, a), false);
    assert.equal(t.delete(-1, a), false);
    assert.equal(t.size, 1);
    assert.deepEqual([...t.values()], [b]);
  });
});
