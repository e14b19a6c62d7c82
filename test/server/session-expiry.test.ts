/**
 * 2025 sessions end after the configured idle time of their client: an open but silent GET
 * stream does not keep one alive (its keep-alives are the server's), a client's messages do.
 */
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { startHubProcess, type HubProcess } from '../helpers/hub-process.js';

let hub: HubProcess;
before(async () => {
  hub = await startHubProcess(['5'], { IDLE_TIMEOUT_MS: '1000' });
});
after(async () => {
  await hub.stop();
});

async function init(): Promise<string> {
  const res = await fetch(hub.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json' },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: {
        protocolVersion: '2025-11-25',
        capabilities: {},
        clientInfo: { name: 'x', version: '1' },
      },
    }),
  });
  await res.text();
  return res.headers.get('mcp-session-id')!;
}

const ping = (sid: string) =>
  fetch(hub.url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json',
      'mcp-session-id': sid,
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'ping' }),
  });

it('expires an idle session, and one with an open but silent GET stream; a pinging one lives', async () => {
  const idle = await init();
  const streaming = await init();
  const pinging = await init();
  assert.equal((await ping(idle)).status, 200);
  const ctl = new AbortController();
  const stream = await fetch(hub.url, {
    signal: ctl.signal,
    headers: { accept: 'text/event-stream', 'mcp-session-id': streaming },
  });
  assert.equal(stream.status, 200);
  const second = await fetch(hub.url, {
    headers: { accept: 'text/event-stream', 'mcp-session-id': streaming },
  });
  assert.equal(second.status, 409, 'one GET stream per session');
  // The stream ends with its session: read it to its end while the pinging client speaks.
  const ended = (async () => {
    const reader = stream.body!.getReader();
    while (!(await reader.read()).done);
  })();
  // Back-to-back pings for 2.5 s (the idle time is 1 s; a sweep runs every 0.5 s).
  const until = Date.now() + 2_500;
  while (Date.now() < until) {
    assert.equal((await ping(pinging)).status, 200, 'a client that speaks keeps its session');
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.equal((await ping(idle)).status, 404);
  assert.equal((await ping(streaming)).status, 404, 'an open stream does not keep it alive');
  await ended;
  ctl.abort();
});
