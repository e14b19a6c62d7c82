/** 2025 sessions end after the configured idle time, unless a GET stream keeps them open. */
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { startHubProcess, type HubProcess } from '../helpers/hub-process.js';

let hub: HubProcess;
before(async () => {
  hub = await startHubProcess(['5'], { IDLE_TIMEOUT_MS: '300' });
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

it('expires an idle session (404) but keeps one with an open GET stream', async () => {
  const idle = await init();
  const streaming = await init();
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
  await new Promise((r) => setTimeout(r, 900));
  assert.equal((await ping(idle)).status, 404);
  assert.equal((await ping(streaming)).status, 200);
  ctl.abort();
});
