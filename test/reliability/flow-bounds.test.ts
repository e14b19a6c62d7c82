/**
 * Flow bounds against a real hub (issue 12, item 2): a client that does not read its event
 * stream while an `execute` script sends notices in a loop (the attack that grew the hub to
 * 7 GiB) is cut off after a bounded buffer and its call aborted, the script really stops, RSS
 * stays bounded and other clients are served; stdio bounds its output the same way.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import type { Client } from '@modelcontextprotocol/client';
import { connectHttpClient } from '../helpers/mcp-client.js';
import { BIN, startMoonhub, type MoonhubProcess } from '../helpers/moonhub-process.js';
import { MODERN_META, modernHeaders, modernToolCall, nonReadingPost } from './flow-helpers.js';
import { call, honestClient, rssMiB, scratch, text, type Scratch } from './helpers.js';

const PLUGIN = String.raw`
local count = 0
mcp.tool("ok", {}, function() return "ok" end)
mcp.tool("bump", {}, function() count = count + 1; return count end)
mcp.tool("count", {}, function() return tostring(count) end)
mcp.tool("updates", {
  input_schema = { type = "object", properties = { n = { type = "integer" } } },
  timeout_ms = 60000,
}, function(p)
  for i = 1, p.n do mcp.resource_updated("flow://hot") end
  return "updated " .. p.n
end)
mcp.resource("flow://hot", { name = "hot" }, function() return "hot" end)
`;

/** The attack: notices of 50 KB in an endless loop, bumping a counter every 10. */
const FLOOD = `
local big = string.rep("x", 50000)
local i = 0
while true do
  i = i + 1
  notice(big)
  if i % 10 == 0 then task.await({ mcp.call("bump", {}) }) end
end
`;

/** Bounds loose enough for the flood to reach the stream: only the stream's buffer stops it. */
const CONFIG = `
plugins: { dirs: [plugins] }
execute:
  messages_per_second: 1000000
  message_bytes: 60000
  max_calls: 1000000
  timeout_ms: 120000
  max_timeout_ms: 120000
plugin_limits: { resource_updates_per_second: 1000000 }
limits:
  streams: { buffer_bytes: 1048576 }
  notices: { per_second: 1000000, burst: 1000000, message_bytes: 131072 }
`;

/** What the hub may hold at most during the attack; unbounded it grew by GiBs in seconds. */
const RSS_BOUND_MIB = 600;

let dir: Scratch;
let hub: MoonhubProcess;
let client: Client;

before(async () => {
  dir = scratch();
  dir.write('plugins/counter.lua', PLUGIN);
  const config = dir.write('moonhub.yaml', CONFIG);
  hub = await startMoonhub(['--config', config, '--no-watch']);
  client = (await connectHttpClient(hub.url, 'modern')).client;
});

after(async () => {
  await client.close();
  await hub.stop();
  dir.remove();
});

async function count(): Promise<number> {
  return Number((await call(client, 'count')).text);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('a client that does not read its event stream', () => {
  it('is cut off after a bounded buffer, its execute script stops, others are served', async (t) => {
    const honest = await honestClient(hub.url, 'ok');
    const pid = hub.child.pid!;
    const rssBefore = rssMiB(pid);
    const before0 = await count();
    const { socket, drain } = nonReadingPost(
      hub.url,
      modernToolCall(1, 'execute', { code: FLOOD }),
      modernHeaders('execute'),
    );
    let maxRss = rssBefore;
    const sampler = setInterval(() => (maxRss = Math.max(maxRss, rssMiB(pid))), 50);
    try {
      // The script bumps the counter while it runs; once its call is aborted the counter stays.
      const t0 = performance.now();
      let last = await count();
      let stableSince = performance.now();
      while (performance.now() - stableSince < 1500 && performance.now() - t0 < 30_000) {
        await sleep(250);
        const now = await count();
        if (now !== last) {
          last = now;
          stableSince = performance.now();
        }
      }
      const stopMs = stableSince - t0;
      t.diagnostic(`bumps ${last - before0}; the script stopped after ${Math.round(stopMs)} ms`);
      assert.ok(last > before0, 'the script was running');
      assert.ok(performance.now() - t0 < 30_000, 'the script never stopped bumping');
      // Reading again finds the connection dropped, after no more than the bound plus what
      // the kernel's socket buffers held.
      const { bytes, ended } = await drain(5000);
      t.diagnostic(`the client then read ${bytes} bytes before the end`);
      assert.ok(ended, 'the hub dropped the connection of the client that did not read');
    } finally {
      clearInterval(sampler);
      socket.destroy();
    }
    const h = await honest.stop();
    t.diagnostic(
      `RSS ${rssBefore.toFixed(0)} -> max ${maxRss.toFixed(0)} MiB; honest calls ${h.count}, p99 ${h.p99.toFixed(1)} ms, max ${h.max.toFixed(1)} ms`,
    );
    assert.ok(maxRss < RSS_BOUND_MIB, `RSS reached ${maxRss} MiB`);
    assert.equal(h.errors, 0, h.messages.join('; '));
    assert.ok(h.count > 0, 'the honest client was served');
    assert.ok(h.p99 < 1000, `honest p99 ${h.p99} ms`);
    assert.ok(hub.alive());
  });

  it('answers a client that reads, notices and all', async () => {
    // A reader gets every notice and the answer.
    const r = await client.callTool({
      name: 'execute',
      arguments: {
        code: 'for i = 1, 200 do notice(string.rep("y", 1000)) end return "done"',
      },
    });
    assert.notEqual(r.isError, true, text(r));
    assert.match(text(r), /"result":"done"/);
  });
});

describe('a subscriptions/listen stream that is not read', () => {
  it('is cut off after a bounded buffer while the updates go on; others are served', async (t) => {
    const body = JSON.stringify({
      jsonrpc: '2.0',
      id: 5,
      method: 'subscriptions/listen',
      params: {
        notifications: { resourceSubscriptions: ['flow://hot'] },
        _meta: MODERN_META,
      },
    });
    const { 'mcp-name': _name, ...headers } = modernHeaders('');
    const { socket, drain } = nonReadingPost(hub.url, body, {
      ...headers,
      'mcp-method': 'subscriptions/listen',
    });
    const honest = await honestClient(hub.url, 'ok');
    const pid = hub.child.pid!;
    let maxRss = rssMiB(pid);
    const sampler = setInterval(() => (maxRss = Math.max(maxRss, rssMiB(pid))), 50);
    try {
      await sleep(300);
      // Each update is a ~150-byte frame on the listen stream: 60,000 of them is ~9 MB, more
      // than the bound (1 MiB) and the kernel's socket buffers (~4 MB on loopback) hold.
      const r = await call(client, 'updates', { n: 60_000 });
      assert.equal(r.text, 'updated 60000');
      const { bytes, ended } = await drain(5000);
      t.diagnostic(`the listener then read ${bytes} bytes before the end`);
      assert.ok(ended, 'the hub dropped the listen stream that was not read');
      assert.ok(bytes < 16 * 1024 * 1024, `${bytes} bytes were waiting`);
    } finally {
      clearInterval(sampler);
      socket.destroy();
    }
    const h = await honest.stop();
    // The plugin's own flood of updates (main-thread work per update) is what slows the honest
    // client here, not the listener: its latency is reported, its errors asserted.
    t.diagnostic(
      `max RSS ${maxRss.toFixed(0)} MiB; honest calls ${h.count}, p99 ${h.p99.toFixed(1)} ms`,
    );
    assert.equal(h.errors, 0, h.messages.join('; '));
    assert.ok(h.count > 0);
    assert.ok(maxRss < RSS_BOUND_MIB, `RSS reached ${maxRss} MiB`);
    assert.equal((await call(client, 'ok')).text, 'ok');
  });
});

describe('stdio whose client does not read', () => {
  function startStdio(config: string) {
    const child = spawn(process.execPath, [BIN, 'serve', '--stdio', '--config', config], {
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let err = '';
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
    return { child, stderr: () => err, exited };
  }

  const lines = [
    {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: {
        protocolVersion: '2025-06-18',
        capabilities: {},
        clientInfo: { name: 't', version: '1' },
      },
    },
    { jsonrpc: '2.0', method: 'notifications/initialized' },
    {
      jsonrpc: '2.0',
      id: 2,
      method: 'tools/call',
      params: { name: 'execute', arguments: { code: FLOOD }, _meta: { progressToken: 2 } },
    },
  ];

  it('aborts the call whose messages back up, and still delivers its answer', async (t) => {
    const s = startStdio(dir.write('stdio.yaml', CONFIG));
    try {
      s.child.stdout.pause();
      s.child.stdin.write(lines.map((l) => JSON.stringify(l) + '\n').join(''));
      // Let the flood back up the output, then start reading: the answer to 2 must come.
      await sleep(4000);
      const rss = rssMiB(s.child.pid!);
      let out = '';
      s.child.stdout.on('data', (d: Buffer) => (out += d.toString()));
      s.child.stdout.resume();
      const deadline = Date.now() + 30_000;
      while (!/"id":2,"result"|"id":2,"error"/.test(out) && Date.now() < deadline) await sleep(100);
      const answer = out.split('\n').find((l) => /^\{"jsonrpc":"2.0","id":2,/.test(l));
      t.diagnostic(`RSS while not read ${rss.toFixed(0)} MiB; answer: ${answer?.slice(0, 200)}`);
      assert.ok(answer !== undefined, 'the aborted call was answered');
      assert.match(
        answer,
        /"error":\{"code":-32000,"message":"Stream cut off: more than 1048576 bytes waited for the client to read \(limits\.streams\.buffer_bytes\); the call was aborted"/,
      );
      assert.ok(out.includes('"id":1,"result"'), 'the initialize answer was not lost');
      assert.ok(rss < RSS_BOUND_MIB, `RSS ${rss} MiB`);
    } finally {
      s.child.kill();
      await s.exited;
    }
  });

  it('drops the peer past limits.streams.stdio_buffer_bytes, with a clear line on stderr', async () => {
    const config = dir.write(
      'stdio-small.yaml',
      CONFIG.replace(
        'buffer_bytes: 1048576',
        'buffer_bytes: 16777216, stdio_buffer_bytes: 1048576',
      ),
    );
    const s = startStdio(config);
    try {
      s.child.stdout.pause();
      s.child.stdin.write(lines.map((l) => JSON.stringify(l) + '\n').join(''));
      const code = await Promise.race([s.exited, sleep(30_000).then(() => 'timeout' as const)]);
      assert.equal(code, 1, `the hub did not exit 1:\n${s.stderr()}`);
      assert.match(
        s.stderr(),
        /stdio client stopped reading: more than 1048576 bytes waited on stdout \(limits\.streams\.stdio_buffer_bytes\)/,
      );
    } finally {
      s.child.kill();
      await s.exited;
    }
  });
});
