/**
 * Bodies that stall just short of their end (limits.body_bytes), against a real hub with token
 * auth and three principals: each such request used to hold its bytes until the connection went
 * (up to 4 MiB each, connections unbounded: 200 of them took a hub from 330 to 900 MiB RSS).
 * Now one principal's bodies in arrival are bounded (429, answered while the client is still
 * sending), all of them too (503); a small request of anybody still gets through, and a closed
 * connection gives its bytes back.
 */
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { makeHubDir, type HubDir, type Issued, sessionIssuer } from '../helpers/auth-hub.js';
import { startMoonhub, type MoonhubProcess } from '../helpers/moonhub-process.js';
import { adminToken, baseOf, sample, scrape } from '../helpers/operations.js';
import { auth, MODERN_META, post } from './limits-helpers.js';

const PLUGIN = `mcp.tool("p.echo", { description = "echo" }, function() return "echo" end)`;
const PART = 700 * 1024;

interface Stalled {
  socket: Socket;
  /** What the hub answered so far ('' while it says nothing). */
  answer: () => string;
}

/** A POST that declares 1 MiB, sends `PART` bytes of it and then waits. */
async function stall(url: string, token: string): Promise<Stalled> {
  const u = new URL(url);
  const socket = connect(Number(u.port), u.hostname);
  let answer = '';
  socket.on('data', (d: Buffer) => (answer += d.toString()));
  socket.on('error', () => {});
  await new Promise((r) => socket.once('connect', r));
  socket.write(
    `POST ${u.pathname} HTTP/1.1\r\nHost: ${u.host}\r\nContent-Type: application/json\r\n` +
      `Accept: application/json, text/event-stream\r\nAuthorization: Bearer ${token}\r\n` +
      `Content-Length: ${1024 * 1024}\r\n\r\n`,
  );
  await new Promise((r) => socket.write(Buffer.alloc(PART, 0x20), r));
  return { socket, answer: () => answer };
}

/** Waits up to `ms` for an answer; '' when none came. */
async function answerWithin(s: Stalled, ms: number): Promise<string> {
  const end = Date.now() + ms;
  while (s.answer() === '' && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
  return s.answer();
}

const discover = (url: string, token: string) =>
  post(
    url,
    { jsonrpc: '2.0', id: 1, method: 'server/discover', params: { _meta: MODERN_META } },
    { ...auth(token), 'MCP-Protocol-Version': '2026-07-28', 'Mcp-Method': 'server/discover' },
  );

describe('request bodies in arrival are bounded per principal and in all', () => {
  let dir: HubDir;
  let hub: MoonhubProcess;
  let A: Issued;
  let B: Issued;
  let C: Issued;
  const open: Stalled[] = [];

  before(async () => {
    dir = makeHubDir({ p: PLUGIN });
    const file = dir.write(
      'moonhub.yaml',
      `auth: { mode: token }
plugins: { dirs: [plugins] }
agents:
  A: { plugins: [p], builtins: [] }
  B: { plugins: [p], builtins: [] }
  C: { plugins: [p], builtins: [] }
limits:
  body_bytes: { per_principal: 1048576, total: 2097152 }
`,
    );
    hub = await startMoonhub(['--config', file, '--data', dir.data, '--no-watch']);
    const issue = sessionIssuer(file, dir.data, hub.url);
    [A, B, C] = [issue('A'), issue('B'), issue('C')];
  });
  after(async () => {
    for (const s of open) s.socket.destroy();
    await hub?.stop();
  });

  it('refuses a principal past its bytes at once, then all past the total, others served', async () => {
    const a1 = await stall(hub.url, A.token);
    open.push(a1);
    assert.equal(await answerWithin(a1, 300), '', 'the first stalled body is held, unanswered');
    const a2 = await stall(hub.url, A.token);
    open.push(a2);
    const refused = await answerWithin(a2, 3000);
    assert.match(refused, /^HTTP\/1\.1 429 /, 'refused while its client is still sending');
    assert.match(refused, /retry-after: 1/i);
    assert.match(refused, /limits\.body_bytes\.per_principal/);

    // Another principal is not locked out: its small requests and one stalled body pass.
    assert.equal((await discover(hub.url, B.token)).status, 200);
    const b1 = await stall(hub.url, B.token);
    open.push(b1);
    assert.equal(await answerWithin(b1, 300), '');
    // A third principal's big body would pass the total: 503; its small request still fits.
    const c1 = await stall(hub.url, C.token);
    open.push(c1);
    const full = await answerWithin(c1, 3000);
    assert.match(full, /^HTTP\/1\.1 503 /);
    assert.match(full, /limits\.body_bytes\.total/);
    assert.equal((await discover(hub.url, C.token)).status, 200);

    // A closed connection gives its bytes back: A may send a big body again.
    a1.socket.destroy();
    await new Promise((r) => setTimeout(r, 200));
    const a3 = await stall(hub.url, A.token);
    open.push(a3);
    assert.equal(await answerWithin(a3, 300), '');

    const text = await scrape(baseOf(hub.url), adminToken(dir.data));
    const n = (limit: string) => sample(text, 'moonhub_limit_refusals_total', { limit });
    assert.ok(n('body_bytes_principal') >= 1);
    assert.ok(n('body_bytes') >= 1);
    assert.ok(hub.alive());
  });
});
