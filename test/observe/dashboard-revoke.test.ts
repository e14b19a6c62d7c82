/**
 * The dashboard's live call stream after its admin token is revoked (issue 12). The token was
 * checked once, when the stream opened: revoked with `moonhub session revoke`, its stream went on
 * showing every call of every agent for as long as it stayed open. Now the hub re-checks the
 * streams' tokens when it sees the sessions change (every 500 ms), as it ends a revoked agent's
 * MCP streams, and cuts that stream; another admin's stream goes on.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { request, type IncomingMessage } from 'node:http';
import { startMoonhub, type MoonhubProcess } from '../helpers/moonhub-process.js';
import { makeHubDir, moonhubCli, rawPost, type HubDir } from '../helpers/auth-hub.js';
import { baseOf } from '../helpers/operations.js';

/** Revoked at t=0, the stream must close by then (the hub looks every 500 ms). */
const CUT_WITHIN_MS = 1500;

interface LiveStream {
  /** Everything received so far. */
  text: () => string;
  /** Resolves with the time (performance.now()) the stream closed. */
  closed: Promise<number>;
  close: () => void;
}

/** Opens /admin/dashboard/calls with `token` on a plain HTTP request. */
function openLive(base: string, token: string): Promise<LiveStream> {
  return new Promise((resolve, reject) => {
    const req = request(`${base}/admin/dashboard/calls`, {
      headers: { Authorization: `Bearer ${token}` },
      agent: false,
    });
    req.once('error', reject);
    req.once('response', (res: IncomingMessage) => {
      if (res.statusCode !== 200) return reject(new Error(`status ${res.statusCode}`));
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (text += d));
      const closed = new Promise<number>((done) => {
        res.once('close', () => done(performance.now()));
        res.once('error', () => done(performance.now()));
      });
      // The hub's first frame: the stream is registered.
      res.once('data', () => resolve({ text: () => text, closed, close: () => req.destroy() }));
    });
    req.end();
  });
}

function adminSession(dir: HubDir): { uuid: string; token: string } {
  const r = moonhubCli(['session', 'create', '--admin', '--data', dir.data]);
  assert.equal(r.status, 0, r.stderr);
  const s = JSON.parse(r.stdout) as { session_uuid: string; token: string };
  return { uuid: s.session_uuid, token: s.token };
}

describe('a revoked admin token and its dashboard live stream', () => {
  let hub: MoonhubProcess;
  let dir: HubDir;
  let base: string;

  before(async () => {
    dir = makeHubDir({ echo: 'mcp.tool("echo.hi", {}, function() return "hi" end)' });
    hub = await startMoonhub(['--plugins', dir.plugins, '--data', dir.data, '--no-watch']);
    base = baseOf(hub.url);
  });

  after(async () => {
    await hub?.stop();
  });

  it('cuts the stream within a second or so; another admin keeps theirs', async () => {
    const kept = adminSession(dir);
    const revoked = adminSession(dir);
    const mine = await openLive(base, kept.token);
    const theirs = await openLive(base, revoked.token);
    let closedEarly = false;
    void theirs.closed.then(() => (closedEarly = true));
    // Past one look at the sessions (the two made above changed them): nothing is cut yet.
    await new Promise((res) => setTimeout(res, 1200));
    assert.equal(closedEarly, false, 'the stream stays open while its token holds');

    const r = moonhubCli(['session', 'revoke', revoked.uuid, '--data', dir.data]);
    assert.equal(r.status, 0, r.stderr);
    // Measured from the command's return (the hub may have seen it while the command exited).
    const t0 = performance.now();
    const cutAt = await Promise.race([
      theirs.closed,
      new Promise<number>((res) => setTimeout(() => res(Infinity), 5000)),
    ]);
    theirs.close();
    assert.ok(
      cutAt - t0 < CUT_WITHIN_MS,
      `the revoked token's stream was cut after ${(cutAt - t0).toFixed(0)} ms (bound ${CUT_WITHIN_MS})`,
    );
    await hub.waitForLog(/dashboard live streams of a revoked token cut/);

    // The other admin's stream still hears calls, and the revoked token opens no new one.
    const call = await rawPost(hub.url, {
      method: 'tools/call',
      params: { name: 'echo.hi', arguments: {} },
    });
    assert.match(call.text, /hi/);
    for (let i = 0; i < 50 && !/echo\.hi/.test(mine.text()); i++)
      await new Promise((res) => setTimeout(res, 50));
    assert.match(mine.text(), /event: call[\s\S]*echo\.hi/);
    mine.close();
    const again = await fetch(`${base}/admin/dashboard/calls`, {
      headers: { Authorization: `Bearer ${revoked.token}` },
    });
    assert.equal(again.status, 401);
  });
});
