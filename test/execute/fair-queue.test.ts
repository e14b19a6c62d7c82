/**
 * The queue of `execute` runs waiting for a worker (src/execute/fair-queue.ts): one principal is
 * the plain FIFO it replaced; several are served round-robin; a full queue gives a newcomer the
 * place of the biggest holder's newest run while that holder has at least two more.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FairQueue } from '../../src/execute/fair-queue.js';

function drain(q: FairQueue<string>): string[] {
  return q.drain();
}

describe('FairQueue', () => {
  it('one principal: FIFO, refused at the bound, nothing evicted', () => {
    const q = new FairQueue<string>(4);
    for (const x of ['a1', 'a2', 'a3', 'a4']) assert.ok(q.push(undefined, x).queued);
    const full = q.push(undefined, 'a5');
    assert.equal(full.queued, undefined);
    assert.equal(full.evicted, undefined);
    assert.equal(q.size, 4);
    assert.equal(q.shift(), 'a1');
    assert.ok(q.push(undefined, 'a6').queued);
    assert.deepEqual(drain(q), ['a2', 'a3', 'a4', 'a6']);
    assert.equal(q.size, 0);
    assert.equal(q.shift(), undefined);
  });

  it('serves principals round-robin, each in its own order', () => {
    const q = new FairQueue<string>(100);
    for (let i = 1; i <= 5; i++) q.push('A', `a${i}`);
    q.push('B', 'b1');
    q.push('C', 'c1');
    q.push('C', 'c2');
    assert.deepEqual(drain(q), ['a1', 'b1', 'c1', 'a2', 'c2', 'a3', 'a4', 'a5']);
  });

  it("a newcomer gets the place of the biggest holder's newest run", () => {
    const q = new FairQueue<string>(8);
    for (let i = 1; i <= 8; i++) q.push('A', `a${i}`);
    const b = q.push('B', 'b1');
    assert.ok(b.queued);
    assert.equal(b.evicted, 'a8');
    // A's own surplus is refused: it holds the most.
    assert.equal(q.push('A', 'a9').queued, undefined);
    // B takes places until it holds as many as A (4 each), then it is refused too.
    for (let i = 2; i <= 4; i++) assert.equal(q.push('B', `b${i}`).evicted, `a${9 - i}`);
    assert.equal(q.push('B', 'b5').queued, undefined);
    assert.equal(q.push('A', 'a10').queued, undefined);
    assert.equal(q.size, 8);
    assert.deepEqual(drain(q), ['a1', 'b1', 'a2', 'b2', 'a3', 'b3', 'a4', 'b4']);
  });

  it('a third principal takes from the biggest holder; an odd bound does not see-saw', () => {
    const q = new FairQueue<string>(5);
    for (let i = 1; i <= 5; i++) q.push('A', `a${i}`);
    assert.equal(q.push('B', 'b1').evicted, 'a5');
    assert.equal(q.push('B', 'b2').evicted, 'a4');
    // A 3, B 2: B would become the biggest, so B is refused, and A is refused as the biggest.
    assert.equal(q.push('B', 'b3').queued, undefined);
    assert.equal(q.push('A', 'a6').queued, undefined);
    assert.equal(q.push('C', 'c1').evicted, 'a3');
    // A 2, B 2, C 1: nobody holds two more than anybody.
    assert.equal(q.push('C', 'c2').queued, undefined);
    assert.deepEqual(drain(q), ['a1', 'b1', 'c1', 'a2', 'b2']);
  });

  it('remove takes a run out from anywhere, once; the counts follow', () => {
    const q = new FairQueue<string>(3);
    const a1 = q.push('A', 'a1').queued!;
    const a2 = q.push('A', 'a2').queued!;
    q.push('A', 'a3');
    assert.equal(q.remove(a2), true);
    assert.equal(q.remove(a2), false);
    assert.equal(q.size, 2);
    assert.ok(q.push('A', 'a4').queued);
    assert.equal(q.remove(a1), true);
    assert.ok(q.push('A', 'a5').queued);
    // Full with A's 3: B (0) takes the newest of them.
    assert.equal(q.push('B', 'b1').evicted, 'a5');
    assert.deepEqual(drain(q), ['a3', 'b1', 'a4']);
  });

  it('a bound of 0 queues nothing', () => {
    const q = new FairQueue<string>(0);
    assert.equal(q.push('A', 'a1').queued, undefined);
    assert.equal(q.size, 0);
  });

  it('stays O(1): 200k pushes and shifts over many principals in well under a second', () => {
    const q = new FairQueue<number>(1000);
    const t0 = performance.now();
    for (let i = 0; i < 200_000; i++) {
      q.push(`p${i % 97}`, i);
      if (q.size >= 1000) q.shift();
    }
    const ms = performance.now() - t0;
    assert.ok(ms < 3000, `${ms.toFixed(0)} ms`);
  });
});
