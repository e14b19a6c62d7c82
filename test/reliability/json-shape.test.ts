/**
 * The shape of a client's JSON (limits.json), against a real hub over HTTP (both eras) and stdio:
 * a 4 MiB body nested 2,000,000 deep used to hold the hub's thread ~850 ms in JSON.parse (and
 * 1.3 million empty objects ~280 ms), and values nested past ~5,000 levels broke every
 * JSON.stringify of them downstream ("Maximum call stack size exceeded" from a proxied call).
 * An object of 90,000 members held it 206-321 ms (a dictionary in V8, 4x the cost of small ones).
 * Now such a message is refused before it is parsed, with an error naming the config key, the
 * refusal is counted, and honest requests sent meanwhile are answered promptly.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import { makeHubDir, type HubDir } from '../helpers/auth-hub.js';
import { waitFor } from '../helpers/mcp-client.js';
import { BIN, startMoonhub, type MoonhubProcess } from '../helpers/moonhub-process.js';
import { adminToken, baseOf, hubLoopDelay, sample, scrape } from '../helpers/operations.js';
import { initialize, MODERN_META, post } from './limits-helpers.js';

const PLUGIN = `mcp.tool("p.echo", { description = "echo" }, function() return "echo" end)`;
const DEEP = '['.repeat(2_000_000) + ']'.repeat(2_000_000);
const WIDE = '[' + Array<string>(1_300_000).fill('{}').join(',') + ']';
const MODERN_HEADERS = { 'MCP-Protocol-Version': '2026-07-28', 'Mcp-Method': 'server/discover' };
const discover = (x: string) =>
  `{"jsonrpc":"2.0","id":7,"method":"server/discover","params":{"x":${x},"_meta":${JSON.stringify(MODERN_META)}}}`;

describe('limits.json over HTTP', () => {
  let dir: HubDir;
  let hub: MoonhubProcess;

  before(async () => {
    dir = makeHubDir({ p: PLUGIN });
    hub = await startMoonhub(['--plugins', dir.plugins, '--data', dir.data, '--no-watch']);
  });
  after(async () => hub?.stop());

  it('refuses deep and crowded messages before parsing them; honest requests stay prompt', async (t) => {
    // The hub's own event-loop delay says whether a body held its thread (a parse of the deep
    // body took ~850 ms); an honest client's worst round trip says nobody was frozen out, with
    // room for a loaded machine's scheduling, which the client's process pays too.
    const admin = adminToken(dir.data);
    await hubLoopDelay(hub.url, admin);
    let stop = false;
    let worst = 0;
    const honest = (async () => {
      while (!stop) {
        const t = performance.now();
        const r = await post(hub.url, discover('1'), MODERN_HEADERS);
        assert.equal(r.status, 200);
        worst = Math.max(worst, performance.now() - t);
        await new Promise((res) => setTimeout(res, 5));
      }
    })();
    await new Promise((res) => setTimeout(res, 100));
    for (let i = 0; i < 3; i++) {
      const deep = await post(hub.url, discover(DEEP), MODERN_HEADERS);
      assert.equal(deep.status, 400);
      assert.equal(deep.body?.error?.code, -32600);
      assert.match(deep.body!.error!.message, /deeper than 256 levels \(limits\.json\.depth\)/);
      const wide = await post(hub.url, discover(WIDE), MODERN_HEADERS);
      assert.equal(wide.status, 400);
      assert.match(wide.body!.error!.message, /more than 100000 .*\(limits\.json\.containers\)/);
    }
    // One object with many members: V8 keeps it as a dictionary (4x the cost of the same members
    // in small objects); 90,000 held the hub 206-321 ms on the loaded machine.
    const keys = (n: number) => `{${Array.from({ length: n }, (_, i) => `"k${i}":1`).join(',')}}`;
    const crowded = await post(hub.url, discover(keys(90_000)), MODERN_HEADERS);
    assert.equal(crowded.status, 400);
    assert.equal(crowded.body?.error?.code, -32600);
    assert.match(
      crowded.body!.error!.message,
      /an object in the message has more than 10000 members \(limits\.json\.object_keys\)/,
    );
    const atBound = await post(hub.url, discover(keys(10_000)), MODERN_HEADERS);
    assert.equal(atBound.status, 200, atBound.text.slice(0, 200));
    stop = true;
    await honest;
    const lag = await hubLoopDelay(hub.url, admin);
    t.diagnostic(
      `hub event-loop delay p99 ${lag.p99} ms, worst ${lag.max} ms; honest worst ${worst.toFixed(0)} ms`,
    );
    assert.ok(lag.max < 300, `the hub's thread was held ${lag.max} ms`);
    assert.ok(worst < 1500, `an honest request waited ${worst.toFixed(0)} ms`);

    // A 2025 session's request nested 10,000 deep: refused with the same clear error.
    const sid = (await initialize(hub.url)).sid!;
    const legacy = await post(
      hub.url,
      `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"p.echo","arguments":{"x":${'['.repeat(10_000) + ']'.repeat(10_000)}}}}`,
      { 'Mcp-Session-Id': sid, 'MCP-Protocol-Version': '2025-11-25' },
    );
    assert.equal(legacy.status, 400);
    assert.match(legacy.body!.error!.message, /limits\.json\.depth/);
    // Nesting within the bound, and brackets inside strings, are not counted against it.
    const fine = await post(
      hub.url,
      discover(`["${'['.repeat(5000)}", ${'['.repeat(200) + ']'.repeat(200)}]`),
      MODERN_HEADERS,
    );
    assert.equal(fine.status, 200, fine.text.slice(0, 200));

    const text = await scrape(baseOf(hub.url), adminToken(dir.data));
    assert.ok(sample(text, 'moonhub_limit_refusals_total', { limit: 'json' }) >= 8);
    assert.ok(hub.alive());
  });
});

describe('limits.json over stdio', () => {
  it('answers a line nested too deep with the error, then serves the next line', async () => {
    const dir = makeHubDir({ p: PLUGIN });
    const child = spawn(
      process.execPath,
      [BIN, 'serve', '--stdio', '--no-watch', '--plugins', dir.plugins, '--data', dir.data],
      { stdio: ['pipe', 'pipe', 'pipe'] },
    );
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    try {
      child.stdin.write(`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":${DEEP}}}\n`);
      child.stdin.write('{"jsonrpc":"2.0","id":2,"method":"ping"}\n');
      await waitFor(() => out.split('\n').filter(Boolean).length >= 2, 15_000, 'two replies');
      const [first, second] = out
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as { id: unknown; error?: { code: number; message: string } });
      assert.equal(first!.id, null);
      assert.equal(first!.error?.code, -32600);
      assert.match(first!.error!.message, /limits\.json\.depth/);
      assert.equal(second!.id, 2);
    } finally {
      child.kill();
    }
  });
});
