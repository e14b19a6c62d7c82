/**
 * `execute.max_queued` is one queue shared by every principal. Before: one principal sending slow
 * runs faster than they ended filled it, and every other principal's run was answered
 * `execute is busy` for as long as it kept sending. Now the queue is shared fairly
 * (src/execute/fair-queue.ts): a newcomer takes the place of the biggest holder's newest run
 * (refused with the same `busy` error, counted as `execute_queue`), and runs leave round-robin,
 * so B's one run waits for at most one of A's runs besides the one in progress, not behind A's
 * whole queue.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { makeHubDir, type Issued, sessionIssuer } from '../helpers/auth-hub.js';
import { startMoonhub, type MoonhubProcess } from '../helpers/moonhub-process.js';
import { adminToken, baseOf, sample, scrape } from '../helpers/operations.js';
import { modern, sleep, type Answer } from './limits-helpers.js';

/** One run of A's: the only worker is A's for this long. */
const SLOW_MS = 1000;
const MAX_QUEUED = 8;
/** A's runs sent at once: one runs, 8 wait, the rest are refused. */
const FLOOD = 20;
/**
 * B's run waits for A's run in progress and at most one more of A's (A's turn in the ring comes
 * first), then runs: 2 × SLOW_MS plus a generous margin for a loaded 2-core machine (measured
 * ~1.9 s). Behind A's whole queue it would be 9 × SLOW_MS.
 */
const B_BOUND_MS = 2 * SLOW_MS + 3000;

interface Result {
  isError?: boolean;
  content?: { text?: string }[];
  structuredContent?: { result?: unknown; error?: string };
}

function resultOf(a: Answer): Result {
  const result = a.body?.result as Result | undefined;
  assert.ok(result !== undefined, a.text.slice(0, 300));
  return result;
}

const BUSY =
  /^execute is busy: 1 scripts are running and 8 are waiting \(execute\.max_queued, shared fairly between principals\); try again later$/;

describe('execute.max_queued is shared fairly between principals', () => {
  let hub: MoonhubProcess;
  let A: Issued;
  let B: Issued;
  let admin: string;

  before(async () => {
    const dir = makeHubDir({});
    const file = dir.write(
      'moonhub.yaml',
      `auth: { mode: token }
plugins: { dirs: [plugins] }
execute: { workers: 1, max_queued: ${MAX_QUEUED} }
agents:
  A: { plugins: [], builtins: [execute] }
  B: { plugins: [], builtins: [execute] }
`,
    );
    hub = await startMoonhub(['--config', file, '--data', dir.data, '--no-watch']);
    const issue = sessionIssuer(file, dir.data, hub.url);
    A = issue('A');
    B = issue('B');
    admin = adminToken(dir.data);
  });
  after(async () => hub?.stop());

  const run = (who: Issued, code: string) =>
    modern(hub.url, who.token, 'tools/call', { name: 'execute', arguments: { code } });
  const refusals = async () =>
    sample(await scrape(baseOf(hub.url), admin), 'moonhub_limit_refusals_total', {
      limit: 'execute_queue',
    });

  it("A's flood fills the queue; B's run is queued, served next, and A's newest gives way", async () => {
    const before = await refusals();
    const flood = Array.from({ length: FLOOD }, (_, i) =>
      run(A, `task.sleep(${SLOW_MS}) return ${i}`),
    );
    // A's surplus is refused at once: wait for those answers (bounded), so the queue is full.
    let refusedSoFar = 0;
    const early = flood.map((p) =>
      p.then((a) => {
        const r = resultOf(a);
        if (r.isError === true) refusedSoFar++;
        return r;
      }),
    );
    for (let i = 0; i < 250 && refusedSoFar < FLOOD - 1 - MAX_QUEUED; i++) await sleep(20);
    assert.equal(refusedSoFar, FLOOD - 1 - MAX_QUEUED, 'A was refused past 1 running + 8 waiting');
    const t0 = performance.now();
    const b = resultOf(await run(B, 'return "b"'));
    const bMs = performance.now() - t0;
    const outcomes = await Promise.all(early);
    const aRefused = outcomes.filter((r) => r.isError === true);
    const aServed = outcomes.filter((r) => r.isError !== true);
    console.log(
      `B answered in ${bMs.toFixed(0)} ms; A: ${aServed.length} served, ${aRefused.length} refused`,
    );
    assert.equal(b.isError, undefined, JSON.stringify(b).slice(0, 300));
    assert.deepEqual(b.structuredContent?.result, 'b');
    assert.ok(bMs < B_BOUND_MS, `B waited ${bMs.toFixed(0)} ms (bound ${B_BOUND_MS})`);
    // One running and 8 waiting, less the one that gave its place to B.
    assert.equal(aServed.length, MAX_QUEUED);
    assert.equal(aRefused.length, FLOOD - MAX_QUEUED);
    for (const r of aRefused) assert.match(r.structuredContent?.error ?? '', BUSY);
    assert.equal((await refusals()) - before, FLOOD - MAX_QUEUED);
  });

  it('one principal alone keeps the plain bound: FIFO, refused past it', async () => {
    const flood = Array.from({ length: MAX_QUEUED + 3 }, (_, i) =>
      run(A, `task.sleep(100) return ${i}`).then(resultOf),
    );
    const outcomes = await Promise.all(flood);
    const served = outcomes.filter((r) => r.isError !== true);
    // 1 running + 8 waiting; the later two are refused (the order HTTP requests arrive in is
    // not the order they were sent, so which two is not asserted).
    assert.equal(served.length, MAX_QUEUED + 1);
    for (const r of outcomes.filter((o) => o.isError === true))
      assert.match(r.structuredContent?.error ?? '', BUSY);
  });
});
