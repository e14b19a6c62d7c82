/**
 * IdTable (src/id-table.ts), the table of calls in flight that replaces Map where entries come
 * and go at the request rate: JSON-RPC ids of every kind stay distinct, size and iteration are
 * right through churn, and a dropped entry is gone.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { IdTable } from '../../src/id-table.js';

describe('IdTable', () => {
  it('keeps ids of every kind apart (1, "1", -1, 1.5, "n1", "s1", "")', () => {
    const t = new IdTable<{ v: string }>();
    const ids = [
      1,
      '1',
      -1,
      '-1',
      1.5,
      '1.5',
      'n1',
      's1',
      '',
      0,
      2 ** 32,
      'constructor',
      '__proto__',
    ];
    for (const id of ids) t.set(id, { v: `${typeof id}:${id}` });
    assert.equal(t.size, ids.length);
    for (const id of ids) {
      assert.equal(t.has(id), true, String(id));
      assert.deepEqual(t.get(id), { v: `${typeof id}:${id}` });
    }
    // Iteration gives the ids back with their types.
    const back = new Map([...t].map(([id, value]) => [`${typeof id}:${id}`, value.v]));
    for (const id of ids) assert.equal(back.get(`${typeof id}:${id}`), `${typeof id}:${id}`);
    assert.equal(t.get(2), undefined);
    assert.equal(t.get('2'), undefined);
  });

  it('counts through churn, replaces in place, and forgets what it dropped', () => {
    const t = new IdTable<{ n: number }, number>();
    for (let i = 0; i < 20_000; i++) {
      t.set(i, { n: i });
      if (i >= 50) assert.equal(t.delete(i - 50), true);
    }
    assert.equal(t.size, 50);
    assert.deepEqual(
      [...t].map(([id]) => id),
      Array.from({ length: 50 }, (_, k) => 19_950 + k),
    );
    assert.equal(t.delete(3), false, 'a dropped id is gone');
    assert.equal(t.get(3), undefined);
    t.set(19_999, { n: -1 });
    assert.equal(t.size, 50, 'setting an id twice counts it once');
    assert.deepEqual(t.get(19_999), { n: -1 });
    assert.equal([...t.values()].length, 50);
    t.clear();
    assert.equal(t.size, 0);
    assert.deepEqual([...t], []);
  });
});
