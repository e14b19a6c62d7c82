/**
 * A stdio client that floods calls: lines used to be dispatched as fast as the pipe delivered
 * them, each call held until it ended, so a flood of calls to a slow tool grew the hub without
 * bound (297,000 lines in 8 s: RSS 173 -> 1,443 MiB and climbing). Now at most
 * limits.stdio_in_flight requests run at once; the rest are answered `stdio_in_flight` at once,
 * and the calls in flight, and the client's next calls, are served.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import { BIN } from '../helpers/moonhub-process.js';
import { makeHubDir } from '../helpers/auth-hub.js';
import { rssMiB } from './helpers.js';
import { sleep } from './limits-helpers.js';

const PLUGIN = `
mcp.tool("p.wait", { description = "waits", timeout_ms = 20000 }, function(params)
  task.sleep(params.ms or 1500)
  return "waited"
end)
mcp.tool("p.echo", { description = "echo" }, function() return "echo" end)
`;

interface Reply {
  id?: unknown;
  result?: { content?: { text?: string }[] };
  error?: { code: number; message: string };
}

describe('a stdio client flooding calls', () => {
  let child: ChildProcessWithoutNullStreams;
  const replies = new Map<string, Reply>();
  let lines = 0;
  let rest = '';

  before(async () => {
    const dir = makeHubDir({ p: PLUGIN });
    const file = dir.write(
      'moonhub.yaml',
      'plugins: { dirs: [plugins] }\nlimits: { stdio_in_flight: 200 }\n',
    );
    child = spawn(process.execPath, [BIN, 'serve', '--stdio', '--no-watch', '--config', file]);
    child.stdin.on('error', () => {});
    // Reads everything (a client that reads), keeping only the replies whose ids are strings.
    child.stdout.on('data', (d: Buffer) => {
      const text = rest + d.toString();
      const parts = text.split('\n');
      rest = parts.pop()!;
      for (const line of parts) {
        lines++;
        if (line.startsWith('{"jsonrpc":"2.0","id":"')) {
          const m = JSON.parse(line) as Reply;
          replies.set(String(m.id), m);
        }
      }
    });
    send({
      jsonrpc: '2.0',
      id: 'init',
      method: 'initialize',
      params: {
        protocolVersion: '2025-11-25',
        capabilities: {},
        clientInfo: { name: 'f', version: '1' },
      },
    });
    await reply('init');
    send({ jsonrpc: '2.0', method: 'notifications/initialized' });
  });
  after(() => {
    child.stdin.end();
    child.kill();
  });

  const send = (msg: unknown) => child.stdin.write(JSON.stringify(msg) + '\n');
  const reply = async (id: string, timeoutMs = 20_000): Promise<Reply> => {
    const start = Date.now();
    while (!replies.has(id)) {
      if (Date.now() - start > timeoutMs) throw new Error(`no reply to ${id}`);
      await sleep(20);
    }
    return replies.get(id)!;
  };
  const waitCall = (id: string, pad = '') =>
    JSON.stringify({
      jsonrpc: '2.0',
      id,
      method: 'tools/call',
      params: { name: 'p.wait', arguments: { pad } },
    }) + '\n';

  it('refuses calls past limits.stdio_in_flight at once; those in flight are answered', async () => {
    let burst = '';
    for (let i = 0; i < 1000; i++) burst += waitCall(`w${i}`);
    child.stdin.write(burst);
    // The refusals come at once, while the first 200 still wait.
    const refused = await reply('w999', 1000);
    assert.equal(refused.error?.code, -32000);
    assert.match(
      refused.error!.message,
      /at most 200 requests of this stdio client run at once \(limits\.stdio_in_flight\)/,
    );
    for (let i = 0; i < 200; i++)
      assert.equal((await reply(`w${i}`)).result?.content?.[0]?.text, 'waited', `w${i}`);
    let refusals = 0;
    for (let i = 200; i < 1000; i++) if ((await reply(`w${i}`)).error !== undefined) refusals++;
    assert.equal(refusals, 800);
    send({ jsonrpc: '2.0', id: 'e1', method: 'tools/call', params: { name: 'p.echo' } });
    assert.equal((await reply('e1', 5000)).result?.content?.[0]?.text, 'echo');
  });

  it('holds its memory under a flood of 100,000 calls of 1 KiB', async () => {
    const pid = child.pid!;
    await sleep(300);
    const rss0 = rssMiB(pid);
    let peak = rss0;
    const pad = 'y'.repeat(1024);
    const started = Date.now();
    // Bounded: 100 writes of 1,000 lines, each awaiting the pipe's drain (8 s at most).
    for (let i = 0; i < 100 && Date.now() - started < 8000; i++) {
      let chunk = '';
      for (let j = 0; j < 1000; j++) chunk += waitCall(`f${i * 1000 + j}`, pad);
      if (!child.stdin.write(chunk)) await new Promise((r) => child.stdin.once('drain', r));
      if (i % 10 === 0) peak = Math.max(peak, rssMiB(pid));
    }
    await sleep(500);
    peak = Math.max(peak, rssMiB(pid));
    // Before: ~4 KB held per pending call (100,000 calls: +400 MiB); now only 200 are held.
    assert.ok(peak - rss0 < 150, `RSS grew from ${rss0.toFixed(0)} to ${peak.toFixed(0)} MiB`);
    assert.equal(child.exitCode, null, 'the hub still serves its client');
    assert.ok(lines > 90_000, `${lines} lines answered`);
    // The client is served again once the 200 calls in flight made room (each waits 1.5 s).
    let echo: Reply | undefined;
    for (let k = 0; k < 20 && echo?.result === undefined; k++) {
      send({ jsonrpc: '2.0', id: `e2-${k}`, method: 'tools/call', params: { name: 'p.echo' } });
      echo = await reply(`e2-${k}`, 5000);
      if (echo.result === undefined) await sleep(500);
    }
    assert.equal(echo?.result?.content?.[0]?.text, 'echo');
  });
});
