/**
 * What resource subscriptions may take of a hub, per principal and in all
 * (`limits.subscriptions.bytes_*`), against real hubs: the per-session bounds alone let one client
 * hold 1,000 sessions of 1,000 subscriptions (measured: +242 MiB for one unauthenticated client).
 * A principal's 2025 sessions and 2026-07-28 listen streams share its budget; refusing one
 * principal leaves the others served; what is already held stays; unsubscribing, ending a session
 * or closing a stream makes room.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { MoonhubProcess } from '../helpers/moonhub-process.js';
import { plainHubFor, startAgentHub, type Issued } from '../helpers/auth-hub.js';
import { baseOf, sample, scrape } from '../helpers/operations.js';
import { rssMiB } from './helpers.js';
import {
  endSession,
  initialize,
  inSession,
  listen,
  sleep,
  type RpcError,
} from './limits-helpers.js';

const PLUGIN = `mcp.tool("p.echo", { description = "echo" }, function() return "echo" end)`;
/** What one subscription to `uri` counts (the URI's characters and 256). */
const cost = (uri: string) => uri.length + 256;

/** Subscribes `uris` in 2025-03-26 batches of 100: each URI's error, or undefined. */
async function subscribeAll(
  url: string,
  sid: string,
  token: string | undefined,
  uris: string[],
): Promise<(RpcError | undefined)[]> {
  const out: (RpcError | undefined)[] = [];
  for (let i = 0; i < uris.length; i += 100) {
    const batch = uris.slice(i, i + 100).map((uri, k) => ({
      jsonrpc: '2.0',
      id: i + k,
      method: 'resources/subscribe',
      params: { uri },
    }));
    const answer = await inSession(url, sid, token, batch, '2025-03-26');
    assert.equal(answer.status, 200, answer.text.slice(0, 300));
    const members = JSON.parse(answer.text) as { id: number; error?: RpcError }[];
    members.sort((a, b) => a.id - b.id);
    for (const m of members) out.push(m.error);
  }
  return out;
}

const open2025 = async (url: string, token?: string) =>
  (await initialize(url, token, '2025-03-26')).sid!;

const uris = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}/${i}`);

describe('subscription budget per principal and in all, three principals', () => {
  const PER_PRINCIPAL = 30_000;
  const TOTAL = 70_000;
  let hub: MoonhubProcess;
  let admin: string;
  let url: string;
  let A: Issued;
  let B: Issued;
  let C: Issued;

  before(async () => {
    const limits = `limits:
  subscriptions: { bytes_per_principal: ${PER_PRINCIPAL}, bytes_total: ${TOTAL} }`;
    const made = await startAgentHub({ p: PLUGIN }, ['A', 'B', 'C'], limits);
    ({ hub, admin } = made);
    ({ A, B, C } = made.tokens as Record<'A' | 'B' | 'C', Issued>);
    url = hub.url;
  });
  after(async () => hub?.stop());

  it("one principal's sessions and listen streams share its budget; others are untouched", async () => {
    const a1 = await open2025(url, A.token);
    const a2 = await open2025(url, A.token);
    const first = uris('p://a1', 100);
    assert.deepEqual(await subscribeAll(url, a1, A.token, first), new Array(100).fill(undefined));
    const held = first.reduce((n, u) => n + cost(u), 0);
    const gauge = async () =>
      sample(await scrape(baseOf(url), admin), 'moonhub_subscription_bytes');
    assert.equal(await gauge(), held, 'moonhub_subscription_bytes');
    // The second session fills what is left of A's budget, then is refused.
    const second = uris('p://a2', 40);
    const answers = await subscribeAll(url, a2, A.token, second);
    let fits = 0;
    for (let n = held; fits < second.length && n + cost(second[fits]!) <= PER_PRINCIPAL; fits++)
      n += cost(second[fits]!);
    assert.ok(fits > 0 && fits < second.length, `${fits} fit`);
    assert.deepEqual(answers.slice(0, fits), new Array(fits).fill(undefined));
    for (const error of answers.slice(fits)) {
      assert.equal(error?.code, -32602);
      assert.match(
        error!.message,
        /at most 30000 bytes on this hub \(limits\.subscriptions\.bytes_per_principal\)/,
      );
    }
    // A repeat of a held URI costs nothing; a listen stream of A's is refused alike.
    assert.deepEqual(await subscribeAll(url, a1, A.token, ['p://a1/7']), [undefined]);
    const refusedListen = await listen(url, A.token, {
      notifications: { resourceSubscriptions: ['p://l/0'] },
    });
    assert.equal(refusedListen.streaming, false);
    assert.match(refusedListen.error!.message, /\(limits\.subscriptions\.bytes_per_principal\)/);
    // B is served: its own session and its own listen stream.
    const b1 = await open2025(url, B.token);
    assert.deepEqual(await subscribeAll(url, b1, B.token, uris('p://b1', 50)), [
      ...new Array(50).fill(undefined),
    ]);
    const bListen = await listen(url, B.token, {
      notifications: { resourceSubscriptions: ['p://bl/0'] },
    });
    assert.equal(bListen.streaming, true);
    bListen.ctl.abort();
    // Unsubscribing makes room for one more; ending a session for its whole share.
    const unsub = await inSession(url, a1, A.token, {
      jsonrpc: '2.0',
      id: 1,
      method: 'resources/unsubscribe',
      params: { uri: 'p://a1/0' },
    });
    assert.equal(unsub.body?.error, undefined);
    assert.deepEqual(await subscribeAll(url, a2, A.token, [second[fits]!]), [undefined]);
    assert.equal(await endSession(url, a1, A.token), 200);
    assert.deepEqual(await subscribeAll(url, a2, A.token, uris('p://a3', 90)), [
      ...new Array(90).fill(undefined),
    ]);
    // The refusals are counted by limit.
    const text = await scrape(baseOf(url), admin);
    const counted = sample(text, 'moonhub_limit_refusals_total', {
      limit: 'subscription_bytes_principal',
    });
    assert.equal(counted, second.length - fits + 1, 'the refused subscriptions and the listen');
    for (const sid of [a2, b1]) await endSession(url, sid, sid === b1 ? B.token : A.token);
  });

  it('past the total a newcomer is refused until somebody lets go; a closed stream frees its share', async () => {
    const a = await open2025(url, A.token);
    const b = await open2025(url, B.token);
    const c = await open2025(url, C.token);
    // A and B take what their budgets allow (about 60,000 of the 70,000).
    for (const [sid, token, name] of [
      [a, A.token, 'a'],
      [b, B.token, 'b'],
    ] as const) {
      const got = await subscribeAll(url, sid, token, uris(`p://${name}`, 120));
      assert.ok(got.some((e) => e === undefined) && got.at(-1) !== undefined);
    }
    // C fits a listen stream, then a few subscriptions, then meets the total.
    const cListen = await listen(url, C.token, {
      notifications: { resourceSubscriptions: uris('p://cl', 10) },
    });
    assert.equal(cListen.streaming, true);
    const got = await subscribeAll(url, c, C.token, uris('p://c', 60));
    const refusedAt = got.findIndex((e) => e !== undefined);
    assert.ok(refusedAt > 0, `C got ${refusedAt} before the total`);
    assert.equal(got[refusedAt]!.code, -32603);
    assert.match(
      got[refusedAt]!.message,
      /at most 70000 bytes on this hub \(limits\.subscriptions\.bytes_total\); try again later/,
    );
    // C's listen stream closes: its ten subscriptions' share comes back to C.
    cListen.ctl.abort();
    let again = await subscribeAll(url, c, C.token, [`p://c/${refusedAt}`]);
    for (let i = 0; i < 50 && again[0] !== undefined; i++) {
      await sleep(50);
      again = await subscribeAll(url, c, C.token, [`p://c/${refusedAt}`]);
    }
    assert.deepEqual(again, [undefined], 'a closed stream frees its share');
    // A ends its session: C is served again, far past what it had.
    assert.equal(await endSession(url, a, A.token), 200);
    const more = await subscribeAll(url, c, C.token, uris('p://c2', 60));
    assert.deepEqual(more, new Array(60).fill(undefined));
  });
});

describe('subscription budget at the defaults, one unauthenticated client', () => {
  const made = plainHubFor({ p: PLUGIN });

  it('stops a flood of subscriptions at 16 MiB of them, and the hub keeps serving', async (t) => {
    const url = made.hub.url;
    const rss0 = rssMiB(made.hub.child.pid!);
    let accepted = 0;
    let refusal: RpcError | undefined;
    // Before, this went on to 1,000 sessions x 1,000 subscriptions (+242 MiB); bounded here at
    // 100 sessions (100,000 subscriptions), past the default's ~63,000.
    for (let s = 0; s < 100 && refusal === undefined; s++) {
      const sid = await open2025(url);
      const got = await subscribeAll(url, sid, undefined, uris(`p://${s}`, 1_000));
      accepted += got.filter((e) => e === undefined).length;
      refusal = got.find((e) => e !== undefined);
    }
    const rss1 = rssMiB(made.hub.child.pid!);
    t.diagnostic(
      `${accepted} subscriptions accepted; RSS ${rss0.toFixed(0)} -> ${rss1.toFixed(0)} MiB`,
    );
    assert.ok(refusal !== undefined, `no refusal after ${accepted} subscriptions`);
    assert.match(
      refusal.message,
      /at most 16777216 bytes .*\(limits\.subscriptions\.bytes_per_principal\)/,
    );
    const expected = Math.floor((16 * 1024 * 1024) / cost('p://10/100'));
    assert.ok(
      Math.abs(accepted - expected) < expected * 0.05,
      `${accepted} accepted, about ${expected} expected`,
    );
    assert.ok(rss1 - rss0 < 60, `RSS grew ${(rss1 - rss0).toFixed(0)} MiB`);
    // The hub still serves a new session (a ping), and a subscription it holds stays.
    const sid = await open2025(url);
    const pong = await inSession(url, sid, undefined, { jsonrpc: '2.0', id: 1, method: 'ping' });
    assert.deepEqual(pong.body?.result, {});
  });
});
