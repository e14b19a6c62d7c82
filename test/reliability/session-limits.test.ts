/**
 * Bounds on 2025 sessions against a real hub with token authentication: sessions per principal
 * and in total, with the oldest idle session evicted instead of refusing newcomers, active
 * sessions and calls in flight never pushed out, and each refusal a clear error counted by limit.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startMoonhub, type MoonhubProcess } from '../helpers/moonhub-process.js';
import { issueOverAdminApi, makeHubDir, type HubDir, type Issued } from '../helpers/auth-hub.js';
import { adminToken, baseOf, sample, scrape } from '../helpers/operations.js';
import { rssMiB } from './helpers.js';
import { initialize, inSession, ping, pool, post, sleep, type Answer } from './limits-helpers.js';

const PLUGIN = `
local released = false
mcp.tool("p.echo", { description = "echo" }, function(params) return "echo" end)
mcp.tool("p.hold", { description = "waits for p.release", timeout_ms = 120000 }, function()
  while not released do task.sleep(20) end
  return "held to the end"
end)
mcp.tool("p.release", { description = "ends p.hold" }, function() released = true; return "ok" end)
`;

function config(limits: string): string {
  return `
auth: { mode: token }
plugins: { dirs: [plugins] }
agents:
  A: { plugins: [p], builtins: [] }
  B: { plugins: [p], builtins: [] }
  C: { plugins: [p], builtins: [] }
limits:
${limits}
`;
}

const call = (url: string, sid: string, token: string, name: string, id: unknown = 2) =>
  inSession(url, sid, token, {
    jsonrpc: '2.0',
    id,
    method: 'tools/call',
    params: { name, arguments: {} },
  });

function resultText(a: Answer): string {
  const r = a.body?.result as { content?: { text?: string }[] } | undefined;
  return r?.content?.[0]?.text ?? JSON.stringify(a.body);
}

async function hubWith(limits: string): Promise<{
  dir: HubDir;
  hub: MoonhubProcess;
  A: Issued;
  B: Issued;
  C: Issued;
  admin: string;
}> {
  const dir = makeHubDir({ p: PLUGIN });
  const file = dir.write('moonhub.yaml', config(limits));
  const hub = await startMoonhub(['--config', file, '--data', dir.data, '--no-watch']);
  const admin = adminToken(dir.data);
  // The agents' sessions over the admin API: what `session create` does, without a CLI start each.
  const issue = (agent: string) => issueOverAdminApi(hub.url, admin, agent);
  return { dir, hub, A: await issue('A'), B: await issue('B'), C: await issue('C'), admin };
}

describe('sessions per principal and in total, small caps', () => {
  let h: Awaited<ReturnType<typeof hubWith>>;
  before(async () => {
    h = await hubWith(
      '  sessions: { total: 4, per_principal: 2, evict_idle_ms: 1500, idle_timeout_ms: 600000 }',
    );
  });
  after(async () => h?.hub.stop());

  it('refuses a principal at its cap only while its sessions are active, and never someone else', async () => {
    const { hub, A, B, C } = h;
    const url = hub.url;
    const a1 = (await initialize(url, A.token)).sid!;
    const a2 = (await initialize(url, A.token)).sid!;
    const a3 = await initialize(url, A.token);
    assert.equal(a3.status, 429);
    assert.equal(a3.body?.error?.code, -32000);
    assert.match(
      a3.body!.error!.message,
      /already has 2 sessions \(limits\.sessions\.per_principal\)/,
    );

    // B is not locked out by A; the store is now full (2 + 2).
    const b1 = (await initialize(url, B.token)).sid!;
    const b2 = (await initialize(url, B.token)).sid!;
    assert.ok(b1 && b2);
    // Everyone is active: a third principal is refused, nobody is pushed out.
    const c1 = await initialize(url, C.token);
    assert.equal(c1.status, 503);
    assert.match(c1.body!.error!.message, /all 4 \(limits\.sessions\.total\) are active/);
    for (const [sid, token] of [
      [a1, A.token],
      [a2, A.token],
      [b1, B.token],
      [b2, B.token],
    ] as const)
      assert.equal((await ping(url, sid, token)).status, 200, 'accepted sessions live on');

    // Once A's sessions are idle, A at its cap ends its own oldest, not one of B's.
    await sleep(1_700);
    assert.equal((await ping(url, b1, B.token)).status, 200);
    assert.equal((await ping(url, b2, B.token)).status, 200);
    const a3b = await initialize(url, A.token);
    assert.equal(a3b.status, 200, a3b.text);
    assert.equal((await ping(url, a1, A.token)).status, 404, "A's oldest idle session ended");
    assert.equal((await ping(url, b1, B.token)).status, 200);
    assert.equal((await ping(url, b2, B.token)).status, 200);

    // The store is full again (a2, a3, b1, b2): C gets in by ending the oldest idle one (a2),
    // not B's, which spoke just now.
    const c2 = await initialize(url, C.token);
    assert.equal(c2.status, 200, c2.text);
    assert.equal((await call(url, c2.sid!, C.token, 'p.echo')).status, 200);
    assert.equal((await ping(url, a2, A.token)).status, 404);
    assert.equal((await ping(url, a3b.sid!, A.token)).status, 200);
    assert.equal((await ping(url, b1, B.token)).status, 200);
    assert.equal((await ping(url, b2, B.token)).status, 200);
  });

  it('counts the refusals by limit in moonhub_limit_refusals_total', async () => {
    const text = await scrape(baseOf(h.hub.url), h.admin);
    const refusals = 'moonhub_limit_refusals_total';
    assert.equal(sample(text, refusals, { limit: 'sessions_per_principal' }), 1);
    assert.equal(sample(text, refusals, { limit: 'sessions' }), 1);
  });
});

describe('what a 2025 session keeps from its initialize', () => {
  it('refuses clientInfo and capabilities past limits.sessions.client_info_chars, keeping nothing', async () => {
    // A session keeps both for its life: 40 sessions with 3 MB of them took a hub +164 MiB.
    const h = await hubWith('  sessions: { client_info_chars: 4096 }');
    try {
      const { hub, A, B } = h;
      const before = rssMiB(hub.child.pid!);
      const big = {
        jsonrpc: '2.0',
        id: 0,
        method: 'initialize',
        params: {
          protocolVersion: '2025-11-25',
          capabilities: { experimental: { pad: 'c'.repeat(1024 * 1024) } },
          clientInfo: { name: 'big', version: '1', pad: 'p'.repeat(2 * 1024 * 1024) },
        },
      };
      for (let i = 0; i < 40; i++) {
        const r = await post(hub.url, big, { Authorization: `Bearer ${A.token}` });
        assert.equal(r.status, 200);
        assert.equal(r.sid, undefined, 'no session is made');
        assert.equal(r.body?.error?.code, -32602);
        assert.match(
          r.body!.error!.message,
          /clientInfo and capabilities may take at most 4096 characters of JSON \(limits\.sessions\.client_info_chars\); these take 314\d{4}/,
        );
      }
      const grown = rssMiB(hub.child.pid!) - before;
      assert.ok(grown < 100, `the hub grew ${Math.round(grown)} MiB`);
      // An ordinary initialize of the same principal, and of another, still gets its session.
      assert.equal((await initialize(hub.url, A.token)).status, 200);
      assert.ok((await initialize(hub.url, B.token)).sid);
      const text = await scrape(baseOf(hub.url), h.admin);
      assert.equal(
        sample(text, 'moonhub_limit_refusals_total', { limit: 'client_info_chars' }),
        40,
      );
    } finally {
      await h.hub.stop();
    }
  });
});

describe('what a 2025 session keeps, parsed', () => {
  it('refuses clientInfo and capabilities of more than limits.sessions.client_info_containers objects and arrays', async (t) => {
    // 16,384 characters of empty objects are 5,460 objects, ~340 KiB once parsed and kept: a
    // principal's 1,000 sessions held that way took ~330 MiB, within client_info_chars.
    const h = await hubWith('  sessions: { per_principal: 2000 }');
    try {
      const { hub, A, B } = h;
      const heavy = {
        jsonrpc: '2.0',
        id: 0,
        method: 'initialize',
        params: {
          protocolVersion: '2025-11-25',
          capabilities: { experimental: { x: Array.from({ length: 5_000 }, () => ({})) } },
          clientInfo: { name: 'heavy', version: '1' },
        },
      };
      const before = rssMiB(hub.child.pid!);
      const answers = await pool(1_000, 8, () =>
        post(hub.url, heavy, { Authorization: `Bearer ${A.token}` }),
      );
      const grown = rssMiB(hub.child.pid!) - before;
      t.diagnostic(`1,000 heavy initializes: RSS +${grown.toFixed(0)} MiB`);
      for (const r of answers) {
        assert.equal(r.sid, undefined, 'no session is made');
        assert.equal(r.body?.error?.code, -32602);
        assert.match(
          r.body!.error!.message,
          /at most 256 objects and arrays \(limits\.sessions\.client_info_containers\)/,
        );
      }
      assert.ok(grown < 150, `the hub grew ${grown.toFixed(0)} MiB`);
      // Real clients' capabilities pass: nested objects well under the bound.
      const ordinary = await post(
        hub.url,
        {
          ...heavy,
          params: {
            ...heavy.params,
            capabilities: {
              roots: { listChanged: true },
              sampling: { tools: {} },
              elicitation: { form: {}, url: {} },
              experimental: { x: Array.from({ length: 200 }, () => ({})) },
            },
          },
        },
        { Authorization: `Bearer ${B.token}` },
      );
      assert.ok(ordinary.sid, JSON.stringify(ordinary.body));
      const text = await scrape(baseOf(hub.url), h.admin);
      assert.equal(
        sample(text, 'moonhub_limit_refusals_total', { limit: 'client_info_containers' }),
        1_000,
      );
    } finally {
      await h.hub.stop();
    }
  });
});

describe('10,000 sessions of one principal', () => {
  let h: Awaited<ReturnType<typeof hubWith>>;
  before(async () => {
    h = await hubWith('  sessions: { total: 10000, per_principal: 10000, evict_idle_ms: 1000 }');
  });
  after(async () => h?.hub.stop());

  it("lets B's 10,001st session in by ending A's oldest idle one; calls in flight and active sessions stay", async (t) => {
    const { hub, A, B } = h;
    const url = hub.url;
    // Oldest of all: a session with a call in flight, then a plain idle one.
    const busy = (await initialize(url, A.token)).sid!;
    const held = call(url, busy, A.token, 'p.hold', 'hold');
    await sleep(200);
    const oldest = (await initialize(url, A.token)).sid!;
    const live = (await initialize(url, A.token)).sid!;
    const rss0 = rssMiB(hub.child.pid!);
    const t0 = performance.now();
    const opened = await pool(9_997, 16, () => initialize(url, A.token));
    const fillMs = performance.now() - t0;
    assert.equal(opened.filter((a) => a.status !== 200).length, 0, 'A fills the store');
    const rss1 = rssMiB(hub.child.pid!);
    t.diagnostic(
      `10,000 sessions: filled in ${fillMs.toFixed(0)} ms, RSS ${rss0.toFixed(1)} -> ${rss1.toFixed(1)} MiB`,
    );
    await sleep(1_100);
    assert.equal((await ping(url, live, A.token)).status, 200);

    const t1 = performance.now();
    const b = await initialize(url, B.token);
    const admitMs = performance.now() - t1;
    assert.equal(b.status, 200, b.text);
    assert.equal(resultText(await call(url, b.sid!, B.token, 'p.echo')), 'echo');
    t.diagnostic(`B's initialize with a full store: ${admitMs.toFixed(1)} ms`);
    assert.ok(admitMs < 2_000, `admitted in ${admitMs} ms`);

    assert.equal((await ping(url, oldest, A.token)).status, 404, 'the oldest idle one ended');
    assert.equal((await ping(url, live, A.token)).status, 200, 'an active one did not');
    // The call in flight on the very oldest session was not cut: it answers once released.
    assert.equal((await call(url, live, A.token, 'p.release')).status, 200);
    assert.equal(resultText(await held), 'held to the end');
    assert.equal((await ping(url, busy, A.token)).status, 200);

    // More newcomers, each ending one idle session: the store stays at its bound.
    const more = await pool(200, 8, () => initialize(url, B.token));
    assert.equal(more.filter((a) => a.status !== 200).length, 0);
    const rss2 = rssMiB(hub.child.pid!);
    t.diagnostic(`after 200 evictions: RSS ${rss2.toFixed(1)} MiB`);
    assert.ok(rss1 - rss0 < 150, `10,000 sessions took ${rss1 - rss0} MiB`);
  });
});
