/**
 * Upstream faults seen through a real moonhub process: unreachable at startup (retried, reported,
 * never fatal), killed mid-call (tool error, hub up, next call reconnects), restarted with a new
 * session (re-initialized and retried), hanging (timeout), answering 500 or garbage, and a stdio
 * child that exits at once (restarted with backoff, not in a spin).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/client';
import { connectHttpClient } from '../helpers/mcp-client.js';
import { startMoonhub, type MoonhubProcess } from '../helpers/moonhub-process.js';
import { startEverythingHttp, type HttpUpstream } from '../helpers/everything.js';
import { refusedUrl, startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream.js';

interface Status {
  upstreams: { url: string; state: string; error?: string; connects: number }[];
}

function text(result: unknown): string {
  return ((result as { content: { text?: string }[] }).content ?? [])
    .map((c) => c.text ?? '')
    .join('\n');
}

async function status(client: Client): Promise<Status> {
  const r = await client.callTool({ name: 'hub_status', arguments: {} });
  return (r as { structuredContent: Status }).structuredContent;
}

describe('upstream faults', () => {
  let upstream: HttpUpstream;
  let fake: FakeUpstream;
  let hub: MoonhubProcess;
  let client: Client;
  const dir = mkdtempSync(join(tmpdir(), 'moonhub-faults-'));
  const spawns = join(dir, 'spawns.txt');

  let dead: string;

  before(async () => {
    dead = await refusedUrl();
    upstream = await startEverythingHttp();
    fake = await startFakeUpstream();
    // A relative file name: it lands in `dir` only if the cwd option took effect.
    const quitter = `stdio:${process.execPath} -e "require('fs').appendFileSync(process.argv[1], 'x')" spawns.txt`;
    writeFileSync(
      join(dir, 'faults.lua'),
      [
        `mcp.proxy(${JSON.stringify(upstream.url)}, { prefix = "ev." })`,
        `mcp.proxy(${JSON.stringify(fake.url)}, { prefix = "fake.", timeout_ms = 800 })`,
        `local ok, err = mcp.proxy(${JSON.stringify(dead)}, { prefix = "dead." })`,
        `log.info("dead proxy", { ok = ok, err = err })`,
        `mcp.proxy(${JSON.stringify(quitter)}, { prefix = "quit.", cwd = ${JSON.stringify(dir)} })`,
        `mcp.tool("alive", {}, function() return "yes" end)`,
      ].join('\n'),
    );
    hub = await startMoonhub(['--plugins', dir]);
    ({ client } = await connectHttpClient(hub.url, 'legacy'));
  });

  after(async () => {
    await client?.close();
    await hub?.stop();
    await upstream?.stop();
    await fake?.close();
  });

  it('loads the plugin although one upstream is unreachable, and reports it', async () => {
    assert.equal(text(await client.callTool({ name: 'alive', arguments: {} })), 'yes');
    const down = (await status(client)).upstreams.find((u) => u.url === dead);
    assert.equal(down?.state === 'connected', false);
    assert.match(down?.error ?? '', /connection refused/);
    await hub.waitForLog(
      /^(?=.*"ok":false)(?=.*"err":"upstream http:\S+ is not connected yet[^"]*connection refused).*"msg":"dead proxy"/m,
    );
  });

  it('restarts a stdio child that exits at once with backoff, not in a spin', async () => {
    await new Promise((r) => setTimeout(r, 3000));
    const n = existsSync(spawns) ? readFileSync(spawns, 'utf8').length : 0;
    assert.ok(n >= 2, `restarted (${n} spawns)`);
    assert.ok(n <= 10, `backoff keeps restarts few (${n} spawns in ~3 s)`);
    assert.equal(text(await client.callTool({ name: 'alive', arguments: {} })), 'yes');
  });

  it('times out a hanging upstream call as a tool error', async () => {
    fake.mode = 'hang';
    const start = Date.now();
    const r = await client.callTool({ name: 'fake.work', arguments: {} });
    assert.equal(r.isError, true);
    assert.match(text(r), /time|timeout/i);
    assert.ok(Date.now() - start < 10_000);
    fake.mode = 'ok';
    assert.equal(text(await client.callTool({ name: 'fake.work', arguments: {} })), 'worked');
  });

  it('turns an HTTP 500 and a garbage answer into tool errors; the hub stays up', async () => {
    fake.mode = '500';
    const r500 = await client.callTool({ name: 'fake.work', arguments: {} });
    assert.equal(r500.isError, true);
    assert.match(text(r500), /500/);
    fake.mode = 'garbage';
    const bad = await client.callTool({ name: 'fake.work', arguments: {} });
    assert.equal(bad.isError, true);
    assert.match(text(bad), /upstream .* failed/);
    fake.mode = 'ok';
    assert.equal(text(await client.callTool({ name: 'fake.work', arguments: {} })), 'worked');
    assert.ok(hub.alive());
  });

  it('reports an upstream killed mid-call as a tool error, then reconnects to its new session', async () => {
    const call = client.callTool({
      name: 'ev.trigger-long-running-operation',
      arguments: { duration: 5, steps: 5 },
    });
    await new Promise((r) => setTimeout(r, 700));
    const port = upstream.port;
    await upstream.stop();
    const r = await call;
    assert.equal(r.isError, true);
    assert.match(text(r), /upstream/);
    assert.ok(hub.alive());
    upstream = await startEverythingHttp(port);
    // The old session id means nothing to the new process: the hub opens a new one.
    const echo = await client.callTool({ name: 'ev.echo', arguments: { message: 'back' } });
    assert.equal(text(echo), 'Echo: back');
  });

  it('re-initializes an expired session (upstream restarted while idle) and retries once', async () => {
    const before = (await status(client)).upstreams.find((u) => u.url === upstream.url)!.connects;
    const port = upstream.port;
    await upstream.stop();
    upstream = await startEverythingHttp(port);
    const echo = await client.callTool({ name: 'ev.echo', arguments: { message: 'again' } });
    assert.equal(text(echo), 'Echo: again');
    const now = (await status(client)).upstreams.find((u) => u.url === upstream.url)!.connects;
    assert.ok(now > before, `a new session was made (${before} -> ${now})`);
  });
});
