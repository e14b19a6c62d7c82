/**
 * The plugin worker hop sends the messages of one event-loop turn in one postMessage
 * (src/plugins/message-batch.ts). Against a real hub: hundreds of calls in flight each get their
 * own answer, nested calls between two plugins' workers too (their answers ride the same
 * bundles), a tool that registers another one is listed once its call has answered (order kept),
 * a slow call in the same turn does not hold back the fast ones' answers beyond its own
 * synchronous work, and a lone call still
 * answers at once.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startMoonhub, type MoonhubProcess } from '../helpers/moonhub-process.js';
import { callTool, pluginsDir } from './isolation-helpers.js';

const A = `
mcp.tool("a.echo", {}, function(p) return "a:" .. tostring(p.text) end)
mcp.tool("a.nested", {}, function(p)
  local r = task.await(mcp.call("b.twice", { text = p.text }))
  return "nested:" .. r.content
end)
mcp.tool("a.add", {}, function(p)
  mcp.tool("a.added" .. p.n, {}, function() return "added" end)
  return "registered " .. p.n
end)
mcp.tool("a.sleepy", {}, function(p) task.sleep(p.ms) return "slept" end)
`;
const B = `
mcp.tool("b.twice", {}, function(p) return p.text .. p.text end)
`;

async function listNames(url: string): Promise<string[]> {
  const res = await fetch(url, {
    method: 'POST',
    headers: {
      'Content-Type': 'application/json',
      Accept: 'application/json, text/event-stream',
      'MCP-Protocol-Version': '2026-07-28',
      'Mcp-Method': 'tools/list',
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/list',
      params: {
        _meta: {
          'io.modelcontextprotocol/protocolVersion': '2026-07-28',
          'io.modelcontextprotocol/clientCapabilities': {},
        },
      },
    }),
  });
  const body = (await res.json()) as { result: { tools: { name: string }[] } };
  return body.result.tools.map((t) => t.name);
}

describe('batched plugin worker messages', () => {
  let hub: MoonhubProcess;

  before(async () => {
    hub = await startMoonhub(['--plugins', pluginsDir({ 'a.lua': A, 'b.lua': B })]);
  });
  after(async () => hub.stop());

  it('300 calls in flight each get their own answer', async () => {
    const answers = await Promise.all(
      Array.from({ length: 300 }, (_, i) => callTool(hub.url, 'a.echo', { text: `n${i}` })),
    );
    answers.forEach((a, i) => assert.equal(a.text, `a:n${i}`, JSON.stringify(a)));
  });

  it('nested calls between two workers, 100 in flight', async () => {
    const answers = await Promise.all(
      Array.from({ length: 100 }, (_, i) => callTool(hub.url, 'a.nested', { text: `x${i}` })),
    );
    answers.forEach((a, i) => assert.equal(a.text, `nested:x${i}x${i}`, JSON.stringify(a)));
  });

  it('a registration made by a call is there once the call has answered', async () => {
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, n) => callTool(hub.url, 'a.add', { n })),
    );
    answers.forEach((a, n) => assert.equal(a.text, `registered ${n}`));
    const names = await listNames(hub.url);
    for (let n = 0; n < 20; n++) assert.ok(names.includes(`a.added${n}`), `a.added${n}`);
  });

  it('fast calls beside a sleeping one answer without waiting for it', async () => {
    const slow = callTool(hub.url, 'a.sleepy', { ms: 1500 });
    const fast = await Promise.all(
      Array.from({ length: 20 }, (_, i) => callTool(hub.url, 'a.echo', { text: `f${i}` })),
    );
    for (const f of fast) assert.ok(f.ms < 1000, `a fast call took ${f.ms} ms`);
    assert.equal((await slow).text, 'slept');
  });

  it('a lone call answers at once', async () => {
    const times: number[] = [];
    for (let i = 0; i < 20; i++) times.push((await callTool(hub.url, 'a.echo', { text: 'x' })).ms);
    times.sort((a, b) => a - b);
    // Idle: ~1 ms. A turn-end wait could only add microseconds; this bounds a lost wake-up.
    assert.ok(times[10]! < 100, `median ${times[10]} ms`);
  });
});
