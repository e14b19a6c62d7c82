/**
 * The progress token a client puts in `_meta.progressToken`, against a real hub: every progress
 * notification of the call echoes it, and `limits.notices.message_bytes` cuts only the message,
 * so a token of megabytes made each notification that large. An `execute` script calling
 * `notice` in a loop (200 at once, then 100 a second, the default notice bounds) then had the
 * hub's thread serialise and write hundreds of megabytes a second for one request. A string
 * token is now bounded like a request id (`limits.request_id_length`): a longer one is refused
 * at once with `progress_token_invalid` (both eras; a batch member in place), while others are served.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startMoonhub, type MoonhubProcess } from '../helpers/moonhub-process.js';
import { initializeSession, rawRequest } from '../helpers/legacy-raw.js';
import { MODERN_META, modern, pool, post, sleep } from './limits-helpers.js';
import { rssMiB, scratch, type Scratch } from './helpers.js';

const PLUGIN = `mcp.tool("ok", {}, function() return "ok" end)`;
const NOTICES = 'for i = 1, 400 do notice("n" .. i) end return "end"';
/** How long a refused attack request may take, and an honest one meanwhile (loaded 2 cores). */
const REFUSAL_MS = 3000;
const HONEST_MAX_MS = 1000;
const RSS_GROWTH_MIB = 150;

const executeCall = (id: number, progressToken: string) => ({
  jsonrpc: '2.0',
  id,
  method: 'tools/call',
  params: { name: 'execute', arguments: { code: NOTICES }, _meta: { progressToken } },
});

describe('progress tokens', () => {
  let dir: Scratch;
  let hub: MoonhubProcess;

  before(async () => {
    dir = scratch();
    dir.write('plugins/ok.lua', PLUGIN);
    const config = dir.write('moonhub.yaml', 'plugins: { dirs: [plugins] }\n');
    hub = await startMoonhub(['--config', config, '--no-watch', '--data', dir.dir + '/data']);
  });
  after(async () => {
    await hub?.stop();
    dir?.remove();
  });

  it('echoes a token of up to limits.request_id_length characters', async () => {
    const sessionId = (await initializeSession(hub.url, undefined)).sessionId;
    const token = 't'.repeat(256);
    const body = executeCall(1, token);
    body.params.arguments.code = 'notice("one") return "end"';
    const res = await rawRequest(hub.url, { method: 'POST', sessionId, body });
    const text = await res.done;
    assert.equal(res.status, 200, text);
    assert.ok(text.includes(`"progressToken":"${token}"`), text.slice(0, 300));
  });

  it('refuses a longer one at once, in both eras', async () => {
    const sessionId = (await initializeSession(hub.url, undefined)).sessionId;
    const res = await rawRequest(hub.url, {
      method: 'POST',
      sessionId,
      body: executeCall(2, 't'.repeat(257)),
    });
    const text = await res.done;
    assert.equal(res.status, 400, text);
    const answer = JSON.parse(text) as { id: unknown; error: { code: number; message: string } };
    assert.equal(answer.id, 2);
    assert.equal(answer.error.code, -32600);
    assert.match(answer.error.message, /progress token is longer than 256 .*request_id_length/);

    const m = await post(
      hub.url,
      {
        jsonrpc: '2.0',
        id: 3,
        method: 'tools/call',
        params: {
          name: 'ok',
          arguments: {},
          _meta: { ...MODERN_META, progressToken: 'm'.repeat(1000) },
        },
      },
      { 'MCP-Protocol-Version': '2026-07-28', 'Mcp-Method': 'tools/call', 'Mcp-Name': 'ok' },
    );
    assert.equal(m.status, 400, m.text);
    assert.match(m.body?.error?.message ?? '', /progress token/);
  });

  it('a flood of megabyte tokens is refused quickly while another client is served', async (t) => {
    const pid = hub.child.pid!;
    const rssBefore = rssMiB(pid);
    let rssMax = rssBefore;
    const sampler = setInterval(() => (rssMax = Math.max(rssMax, rssMiB(pid))), 50);
    let running = true;
    const honest: number[] = [];
    const honestLoop = (async () => {
      while (running) {
        const t0 = performance.now();
        const a = await modern(hub.url, undefined, 'tools/call', { name: 'ok', arguments: {} });
        assert.equal(a.status, 200, a.text);
        honest.push(performance.now() - t0);
        await sleep(20);
      }
    })();
    const token = 'T'.repeat(3 * 1024 * 1024);
    const sessionId = (await initializeSession(hub.url, undefined)).sessionId;
    const times: number[] = [];
    try {
      await pool(8, 2, async (i) => {
        const t0 = performance.now();
        const body = executeCall(100 + i, token);
        const res = await rawRequest(hub.url, { method: 'POST', sessionId, body });
        // Bounded: before the bound each of these streamed for seconds (a gigabyte and more).
        const ended = await Promise.race([res.done.then(() => true), sleep(10_000)]);
        res.close();
        times.push(performance.now() - t0);
        assert.equal(res.status, 400, res.text().slice(0, 200));
        assert.equal(ended, true);
      });
    } finally {
      running = false;
      await honestLoop;
      clearInterval(sampler);
    }
    const slowest = Math.max(...times);
    const worst = Math.max(...honest);
    t.diagnostic(`refusals: slowest ${Math.round(slowest)} ms; honest: ${honest.length} calls,`);
    t.diagnostic(`slowest ${Math.round(worst)} ms; RSS +${Math.round(rssMax - rssBefore)} MiB`);
    assert.ok(slowest < REFUSAL_MS, `a refusal took ${Math.round(slowest)} ms`);
    assert.ok(worst < HONEST_MAX_MS, `an honest call took ${Math.round(worst)} ms`);
    assert.ok(rssMax - rssBefore < RSS_GROWTH_MIB, `RSS grew ${Math.round(rssMax - rssBefore)}`);
  });
});
