/**
 * The context table's key for client capabilities (src/plugins/caps-key.ts): always the
 * capabilities' JSON text, but found without serialising a call's new object when it equals
 * capabilities seen just before (every 2026-07-28 request brings its own object). What must
 * hold: two capabilities share a key exactly when their JSON is the same, whatever order they
 * come in, however the remembered ones were changed after, and whatever a client sends.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { capsKey } from '../../src/plugins/caps-key.js';
import { ContextTable } from '../../src/plugins/context-table.js';

/** A small JSON value from a seed: nested objects, arrays and each primitive kind. */
function valueOf(seed: number, depth = 0): unknown {
  const r = (n: number) => (seed = (seed * 1103515245 + 12345) % 2147483648) % n;
  const kind = depth > 2 ? r(4) : r(6);
  if (kind === 0) return r(3) === 0 ? null : r(2) === 0;
  if (kind === 1) return r(5) - 2 + (r(2) === 0 ? 0.5 : 0);
  if (kind === 2) return ['a', 'b', '1', '', '{', 'sampling'][r(6)];
  if (kind === 3) return {};
  if (kind === 4) return Array.from({ length: r(3) }, (_, i) => valueOf(seed + i, depth + 1));
  const o: Record<string, unknown> = {};
  for (let i = 0; i < r(4); i++)
    o[['a', 'b', 'form', '0', 'x'][r(5)]!] = valueOf(seed + i, depth + 1);
  return o;
}

describe('capsKey', () => {
  it('is the JSON text of every value, in any order, hits and misses', () => {
    const values: unknown[] = [
      {
        sampling: {},
        elicitation: { form: { applyDefaults: true } },
        roots: { listChanged: false },
      },
      {
        roots: { listChanged: false },
        sampling: {},
        elicitation: { form: { applyDefaults: true } },
      },
      { a: 1 },
      { a: '1' },
      { a: [1] },
      { a: { 0: 1 } },
      { a: [] },
      { a: {} },
      { a: null },
      { a: false },
      { a: 'b', c: 'd' },
      { a: { b: 'c' }, d: 'e' },
      { a: { b: 'c', d: 'e' } },
      { 2: 'x', 1: 'y', b: 'z' },
      JSON.parse('{"__proto__":{"x":1},"y":2}'),
      { a: -0 },
      { a: 0 },
      ...Array.from({ length: 60 }, (_, i) => valueOf(i + 1)).filter(
        (v) => typeof v === 'object' && v !== null && !Array.isArray(v),
      ),
    ];
    // Fresh copies, in runs (hits) and interleaved (more distinct ones than are remembered).
    for (let round = 0; round < 3; round++)
      for (let i = 0; i < values.length; i++)
        for (const j of [i, i, (i * 7) % values.length, i]) {
          const v = JSON.parse(JSON.stringify(values[j])) as Record<string, unknown>;
          assert.equal(capsKey(v), JSON.stringify(v), `value ${j}`);
        }
  });

  it('answers for what an object holds now, not what it held when first seen', () => {
    const caps: Record<string, unknown> = { sampling: {}, roots: { listChanged: true } };
    assert.equal(capsKey(caps), JSON.stringify(caps));
    (caps.roots as Record<string, unknown>).listChanged = false;
    assert.equal(capsKey(caps), JSON.stringify(caps));
    caps.elicitation = {};
    assert.equal(capsKey(caps), JSON.stringify(caps));
    delete caps.sampling;
    assert.equal(capsKey(caps), JSON.stringify(caps));
  });

  it('reads own members only, as JSON does, and values JSON cannot hold take the long way', () => {
    const proto = { inherited: true };
    const child = Object.create(proto) as Record<string, unknown>;
    child.own = 1;
    assert.equal(capsKey({ own: 1 }), '{"own":1}');
    assert.equal(capsKey(child), JSON.stringify(child));
    for (const odd of [{ a: NaN }, { a: Infinity }, { a: undefined, b: 1 }, { a: [undefined] }])
      for (let i = 0; i < 2; i++) assert.equal(capsKey(odd), JSON.stringify(odd));
    // Past the remembered size: still right, every time.
    const big = {
      experimental: Object.fromEntries(Array.from({ length: 300 }, (_, i) => [`k${i}`, i])),
    };
    for (let i = 0; i < 3; i++) assert.equal(capsKey({ ...big }), JSON.stringify(big));
  });

  it('serialises equal capabilities in new objects once, not per call', () => {
    const table = new ContextTable(8, () => {});
    const ctx = { hub_id: 'h', principal: 'p' };
    const fresh = () => ({
      sampling: {},
      elicitation: { form: { applyDefaults: true } },
      roots: { listChanged: false },
    });
    const stringify = JSON.stringify;
    let calls = 0;
    JSON.stringify = ((...args: Parameters<typeof stringify>) => {
      calls++;
      return stringify(...args);
    }) as typeof stringify;
    let ids: (number | undefined)[];
    try {
      ids = Array.from({ length: 1000 }, () =>
        table.idOf(ctx, { pollLater: false, caps: fresh() }),
      );
    } finally {
      JSON.stringify = stringify;
    }
    assert.equal(new Set(ids).size, 1);
    assert.ok(calls <= 1, `JSON.stringify ran ${calls} times for 1,000 equal capabilities`);
  });
});
