/**
 * What watches calls keeps their names: the dashboard's recent calls (a ring of 250), the
 * per-(principal, tool) rate buckets (up to 100,000), the audit log. A tools/call naming a
 * 4 MiB tool that does not exist used to be kept whole by each: 250 such calls took a hub from
 * ~170 to ~950 MiB (the dashboard, on by default), ~2.1 GiB with limits.rate.tool on. Names are
 * now bounded at the front door (limits.name_length; resources/read URIs by
 * limits.subscriptions.uri_length), refused with an error that names the key and not the name.
 * A dashboard viewer that stops reading is dropped past limits.streams.buffer_bytes.
 */
import assert from 'node:assert/strict';
import { statSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { startMoonhub, type MoonhubProcess } from '../helpers/moonhub-process.js';
import { issueOverAdminApi, makeHubDir, type Issued } from '../helpers/auth-hub.js';
import { adminToken, baseOf, sample, scrape } from '../helpers/operations.js';
import { rssMiB } from './helpers.js';
import { initialize, inSession, modern, ping, pool, sleep } from './limits-helpers.js';

const PLUGIN = `mcp.tool("p.echo", { description = "echo" }, function() return "echo" end)`;
/** Definitions longer than the front door lets a call name: they register, with a warning. */
const LONG = `
mcp.tool(string.rep("t", 300), { description = "long" }, function() return "long" end)
mcp.prompt(string.rep("r", 260), { description = "long" }, function() return "long" end)
mcp.resource("long://" .. string.rep("u", 5000), { name = "long" }, function() return 1 end)
mcp.tool("long.ok", { description = "fits" }, function() return "ok" end)
`;

describe('names of called tools, prompts and resources are bounded', () => {
  let hub: MoonhubProcess;
  let A: Issued;
  let B: Issued;
  let E: Issued;
  let admin: string;
  let url: string;
  let audit: string;

  before(async () => {
    const dir = makeHubDir({ p: PLUGIN, long: LONG });
    audit = join(dir.root, 'audit.jsonl');
    const file = dir.write(
      'moonhub.yaml',
      `auth: { mode: token }
plugins: { dirs: [plugins] }
agents:
  A: { plugins: [p], builtins: [] }
  B: { plugins: [p], builtins: [] }
  E: { plugins: [p, long], builtins: [execute, hub_status] }
limits:
  rate: { tool: { per_second: 100000 } }
  streams: { buffer_bytes: 65536 }
observe: { audit: { to: audit.jsonl } }
`,
    );
    hub = await startMoonhub(['--config', file, '--data', dir.data, '--no-watch']);
    url = hub.url;
    admin = adminToken(dir.data);
    // The agents' sessions over the admin API: what `session create` does, without a CLI start each.
    A = await issueOverAdminApi(url, admin, 'A');
    B = await issueOverAdminApi(url, admin, 'B');
    E = await issueOverAdminApi(url, admin, 'E');
  });
  after(async () => hub?.stop());

  const callTool = (sid: string, name: string, id: number) =>
    inSession(url, sid, A.token, {
      jsonrpc: '2.0',
      id,
      method: 'tools/call',
      params: { name, arguments: {} },
    });

  it('refuses 250 calls of 4 MiB tool names: heap bounded, B served meanwhile', async () => {
    const a = (await initialize(url, A.token)).sid!;
    const b = (await initialize(url, B.token)).sid!;
    const exact = await callTool(a, 'q'.repeat(256), 1);
    assert.match(exact.body!.error!.message, /^Unknown tool/, 'a name of exactly 256 is looked up');
    const pid = hub.child.pid!;
    await sleep(500);
    const rss0 = rssMiB(pid);
    let slowest = 0;
    let served = 0;
    let running = true;
    const honest = (async () => {
      while (running) {
        const t0 = performance.now();
        assert.equal((await ping(url, b, B.token)).status, 200);
        slowest = Math.max(slowest, performance.now() - t0);
        served++;
        await sleep(20);
      }
    })();
    const big = 'x'.repeat(4_000_000);
    let peak = rss0;
    const answers = await pool(250, 4, async (i) => {
      const r = await callTool(a, `${i}.${big}`, i + 10);
      if (i % 10 === 0) peak = Math.max(peak, rssMiB(pid));
      return r;
    });
    running = false;
    await honest;
    await sleep(1000);
    const rss1 = rssMiB(pid);
    for (const r of answers) {
      assert.equal(r.body?.error?.code, -32602);
      assert.match(
        r.body!.error!.message,
        /a tool name may be at most 256 characters \(limits\.name_length\); this one has 400000\d/,
      );
      assert.ok(r.text.length < 400, 'the name is not echoed');
    }
    // Kept: ~4 MiB a call before (250 calls: +780 MiB). Parsing 4 bodies at once is what remains.
    assert.ok(rss1 - rss0 < 150, `RSS grew ${(rss1 - rss0).toFixed(0)} MiB (peak ${peak})`);
    assert.ok(served > 5, `B was served ${served} times`);
    assert.ok(slowest < 2000, `B's slowest ping took ${slowest.toFixed(0)} ms`);
    const text = await scrape(baseOf(url), admin);
    assert.ok(sample(text, 'moonhub_limit_refusals_total', { limit: 'name_length' }) >= 250);
    // The honest call goes on.
    const ok = await callTool(a, 'p.echo', 999);
    assert.equal(ok.body?.error, undefined);
  });

  it('bounds prompts/get names and resources/read URIs the same way', async () => {
    const a = (await initialize(url, A.token)).sid!;
    const prompt = await inSession(url, a, A.token, {
      jsonrpc: '2.0',
      id: 1,
      method: 'prompts/get',
      params: { name: 'n'.repeat(257) },
    });
    assert.match(prompt.body!.error!.message, /a prompt name may be at most 256 .*name_length/);
    const read = await inSession(url, a, A.token, {
      jsonrpc: '2.0',
      id: 2,
      method: 'resources/read',
      params: { uri: 'p://' + 'u'.repeat(4093) },
    });
    assert.match(
      read.body!.error!.message,
      /a resource URI may be at most 4096 characters \(limits\.subscriptions\.uri_length\); this one has 4097/,
    );
  });

  it("bounds an execute script's inner calls the same way: not kept, B served", async () => {
    const b = (await initialize(url, B.token)).sid!;
    const pid = hub.child.pid!;
    await sleep(300);
    const rss0 = rssMiB(pid);
    const audit0 = statSync(audit).size;
    const refusals = async () =>
      sample(await scrape(baseOf(url), admin), 'moonhub_limit_refusals_total', {
        limit: 'name_length',
      });
    const refused0 = await refusals();
    let served = 0;
    let running = true;
    const honest = (async () => {
      while (running) {
        assert.equal((await ping(url, b, B.token)).status, 200);
        served++;
        await sleep(20);
      }
    })();
    // 60 calls of 4 MB unknown names, one after the other; each is refused before the hub keeps
    // its name (before: +4 MB each in the (principal, tool) buckets and the audit log).
    const code = `
      local big = string.rep("x", 4000000)
      local errors = {}
      for i = 1, 60 do
        local r = task.await(mcp.call(i .. big, {}))
        if r.is_error and #r.content < 400 then errors[#errors + 1] = r.content end
      end
      local ok, raised = pcall(tools.use, string.rep("y", 257), {})
      return { errors = errors, raised = tostring(raised), exact = task.await(mcp.call(string.rep("q", 256), {})).content }`;
    const run = await modern(url, E.token, 'tools/call', { name: 'execute', arguments: { code } });
    running = false;
    await honest;
    await sleep(500);
    const rss1 = rssMiB(pid);
    const out = (run.body?.result as { structuredContent?: { result?: Record<string, unknown> } })
      ?.structuredContent?.result;
    assert.ok(out !== undefined, run.text.slice(0, 500));
    const errors = out.errors as string[];
    assert.equal(errors.length, 60, 'each refusal is short: the name is not echoed');
    assert.match(
      errors[0]!,
      /Invalid params: a tool name may be at most 256 characters \(limits\.name_length\); this one has 4000001/,
    );
    assert.match(String(out.raised), /a tool name may be at most 256 characters .* has 257/);
    assert.match(String(out.exact), /^Unknown tool/, 'a name of exactly 256 is looked up');
    assert.ok(rss1 - rss0 < 100, `RSS grew ${(rss1 - rss0).toFixed(0)} MiB`);
    const logged = statSync(audit).size - audit0;
    assert.ok(logged < 100_000, `the audit log grew by ${logged} bytes`);
    assert.ok(served > 3, `B was served ${served} times`);
    // Counted like the front door's refusals: the 60 mcp.call and the tools.use (before: none).
    assert.equal((await refusals()) - refused0, 61);
  });

  it('registers a definition longer than the bounds, with one warning naming it', async () => {
    const log = hub.log();
    for (const re of [
      /"plugin":"long"[^\n]*tool 't{64}\.\.\.' cannot be called: its name has 300 characters, more than limits\.name_length \(256\)/,
      /"plugin":"long"[^\n]*prompt 'r{64}\.\.\.' cannot be called: its name has 260 characters/,
      /"plugin":"long"[^\n]*resource 'long:\/\/u{57}\.\.\.' cannot be read: its URI has 5007 characters, more than limits\.subscriptions\.uri_length \(4096\)/,
    ])
      assert.equal(log.match(new RegExp(re.source, 'g'))?.length, 1, `one line: ${re}`);
    assert.doesNotMatch(log, /long\.ok[^\n]*cannot be/);
    // Registered (a Botster plugin loads as it does there), shown by hub_status with its warnings.
    const list = await modern(url, E.token, 'tools/list', {});
    assert.ok(JSON.stringify(list.body).includes('t'.repeat(300)));
    const status = await modern(url, E.token, 'tools/call', { name: 'hub_status', arguments: {} });
    const plugins = (
      status.body?.result as {
        structuredContent: { plugins: { name: string; loaded: boolean; warnings?: string[] }[] };
      }
    ).structuredContent.plugins;
    const long = plugins.find((p) => p.name === 'long')!;
    assert.equal(long.loaded, true);
    assert.equal(long.warnings?.length, 3, JSON.stringify(long));
    assert.match(
      long.warnings![0]!,
      /cannot be called: its name has 300 characters.*limits\.name_length/,
    );
    assert.equal(plugins.find((p) => p.name === 'p')!.warnings, undefined);
    // ... and on the dashboard's plugin list.
    const state = (await (
      await fetch(`${baseOf(url)}/admin/dashboard/state`, {
        headers: { Authorization: `Bearer ${admin}` },
      })
    ).json()) as { plugins: { name: string; warnings: string[] }[] };
    assert.equal(state.plugins.find((p) => p.name === 'long')!.warnings.length, 3);
  });

  it('drops a dashboard viewer that stops reading; the live calls go on', async () => {
    const base = new URL(baseOf(url));
    const viewer = connect(Number(base.port), base.hostname);
    let closed = false;
    viewer.on('close', () => (closed = true));
    viewer.on('error', () => {});
    await new Promise((r) => viewer.once('connect', r));
    viewer.write(
      `GET /admin/dashboard/calls HTTP/1.1\r\nHost: ${base.host}\r\nAuthorization: Bearer ${admin}\r\n\r\n`,
    );
    await sleep(300);
    viewer.pause(); // reads nothing more: the kernel's buffers fill, then the hub's
    const init = await initialize(url, B.token, '2025-03-26');
    const sid = init.sid!;
    const batch = Array.from({ length: 100 }, (_, i) => ({
      jsonrpc: '2.0',
      id: i,
      method: 'ping',
    }));
    const pid = hub.child.pid!;
    const rss0 = rssMiB(pid);
    // 1,000 batches: 200,000 frames of ~170 bytes (34 MB); the kernel's loopback buffers take
    // several MiB before the hub's own backlog starts.
    for (let i = 0; i < 1000; i++)
      assert.equal((await inSession(url, sid, B.token, batch, '2025-03-26')).status, 200);
    const grown = rssMiB(pid) - rss0;
    // A paused socket reports its end only once read: read what reached us, then it must end
    // (kept open, the heartbeat would keep it alive for ever).
    viewer.resume();
    for (let i = 0; i < 100 && !closed; i++) await sleep(50);
    assert.ok(closed, 'the hub closed the viewer that did not read');
    assert.ok(grown < 60, `RSS grew ${grown.toFixed(0)} MiB: the frames were not held`);
    // Another viewer is served.
    const again = await fetch(`${baseOf(url)}/admin/dashboard/state`, {
      headers: { Authorization: `Bearer ${admin}` },
    });
    assert.equal(again.status, 200);
    viewer.destroy();
  });
});
