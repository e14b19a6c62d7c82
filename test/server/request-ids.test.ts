/**
 * A request id reused while its call still runs, against a real hub. In a 2025 session the
 * second request used to take the first one's place in the session's calls in flight: the first
 * could then not be cancelled, and went on running when the session was deleted. Over stdio the
 * same held for 2026-07-28 requests (kept by the connection, not a session): the first call could
 * no longer be cancelled by notifications/cancelled, and the peer got two answers with one id.
 * Now the reuse is refused (-32600 request_id_in_use) and the first call stays cancellable.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import { makeHubDir, type HubDir } from '../helpers/auth-hub.js';
import { BIN, startMoonhub, type MoonhubProcess } from '../helpers/moonhub-process.js';
import { initialize, MODERN_META, post, sleep } from '../reliability/limits-helpers.js';

const PLUGIN = `mcp.tool("p.wait", { description = "waits" }, function(args)
  task.sleep(args.ms or 3000)
  return "waited"
end)`;

describe('request ids in flight in a 2025 session', () => {
  let dir: HubDir;
  let hub: MoonhubProcess;

  before(async () => {
    dir = makeHubDir({ p: PLUGIN });
    hub = await startMoonhub(['--plugins', dir.plugins, '--data', dir.data, '--no-watch']);
  });
  after(async () => hub?.stop());

  it('refuses an id still in use; the first call stays cancellable by the session', async () => {
    const sid = (await initialize(hub.url)).sid!;
    const headers = { 'Mcp-Session-Id': sid, 'MCP-Protocol-Version': '2025-11-25' };
    const call = (ms: number) =>
      post(
        hub.url,
        {
          jsonrpc: '2.0',
          id: 'x',
          method: 'tools/call',
          params: { name: 'p.wait', arguments: { ms } },
        },
        headers,
      );
    const started = Date.now();
    const first = call(3000);
    await new Promise((r) => setTimeout(r, 300));
    const second = await call(10);
    assert.equal(second.body?.error?.code, -32600);
    assert.match(second.body!.error!.message, /request id "x" is already used by a call/);
    // Ending the session stops the first call (it is still the session's).
    const del = await fetch(hub.url, { method: 'DELETE', headers });
    assert.equal(del.status, 200);
    const answer = await first;
    assert.match(answer.text, /cancelled/);
    assert.ok(Date.now() - started < 2500, 'the first call stopped with its session');
  });
});

describe('request ids in flight on a stdio connection (2026-07-28)', () => {
  let child: ChildProcessWithoutNullStreams;
  let out = '';

  before(async () => {
    const dir = makeHubDir({ p: PLUGIN });
    child = spawn(process.execPath, [
      BIN,
      'serve',
      '--stdio',
      '--no-watch',
      '--plugins',
      dir.plugins,
    ]);
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    // The cases time their calls: wait until the hub serves (a loaded machine starts it slowly).
    let err = '';
    await new Promise<void>((ready, fail) => {
      const timer = setTimeout(
        () => fail(new Error(`the stdio hub did not start:\n${err}`)),
        60_000,
      );
      child.stderr.on('data', (d: Buffer) => {
        err += d.toString();
        if (/serving MCP on stdio/.test(err)) {
          clearTimeout(timer);
          ready();
        }
      });
    });
  });
  after(() => {
    child.stdin.end();
    child.kill();
  });

  interface Line {
    id?: unknown;
    result?: { content?: { text?: string }[] };
    error?: { code: number; message: string };
  }
  const answers = (id: unknown): Line[] =>
    out
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as Line)
      .filter((m) => JSON.stringify(m.id) === JSON.stringify(id));
  const nth = async (id: unknown, n: number, timeoutMs = 10_000): Promise<Line> => {
    const start = Date.now();
    while (answers(id).length < n) {
      if (Date.now() - start > timeoutMs)
        throw new Error(`no answer ${n} to ${String(id)}:\n${out}`);
      await sleep(10);
    }
    return answers(id)[n - 1]!;
  };
  const send = (msg: unknown) => child.stdin.write(JSON.stringify(msg) + '\n');
  const wait = (id: unknown, ms: number) =>
    send({
      jsonrpc: '2.0',
      id,
      method: 'tools/call',
      params: { name: 'p.wait', arguments: { ms }, _meta: MODERN_META },
    });

  it('refuses an id still in use; the first call stays cancellable', async () => {
    const started = Date.now();
    wait('x', 3000);
    await sleep(300);
    wait('x', 10);
    const second = await nth('x', 1, 2000);
    assert.equal(second.error?.code, -32600, JSON.stringify(second));
    assert.match(second.error!.message, /request id "x" is already used by a call/);
    // The first call is still the connection's: cancelling its id stops it.
    send({
      jsonrpc: '2.0',
      method: 'notifications/cancelled',
      params: { requestId: 'x', _meta: MODERN_META },
    });
    const first = await nth('x', 2, 5000);
    assert.match(JSON.stringify(first), /cancelled/);
    assert.ok(Date.now() - started < 2500, 'the first call stopped when cancelled');
    assert.equal(answers('x').length, 2, 'one answer per request');
    // The id is free again once its call ended.
    wait('x', 10);
    assert.equal((await nth('x', 3)).result?.content?.[0]?.text, 'waited');
  });

  it('refuses a call reusing the id of an open subscriptions/listen, and the reverse', async () => {
    send({
      jsonrpc: '2.0',
      id: 'L',
      method: 'subscriptions/listen',
      params: { notifications: { toolsListChanged: true }, _meta: MODERN_META },
    });
    for (let i = 0; i < 200 && !out.includes('subscriptions/acknowledged'); i++) await sleep(20);
    wait('L', 10);
    assert.equal((await nth('L', 1)).error?.code, -32600);
    wait('W', 2000);
    await sleep(100);
    send({
      jsonrpc: '2.0',
      id: 'W',
      method: 'subscriptions/listen',
      params: { notifications: { toolsListChanged: true }, _meta: MODERN_META },
    });
    const refused = await nth('W', 1, 1500);
    assert.equal(refused.error?.code, -32600, JSON.stringify(refused));
    assert.equal((await nth('W', 2)).result?.content?.[0]?.text, 'waited');
  });
});
