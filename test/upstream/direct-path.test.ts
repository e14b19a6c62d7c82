/**
 * The direct path of proxied calls (src/upstream/direct-http.ts), in process against real
 * upstreams: calls reuse keep-alive connections, a cancelled 2025 call tells the upstream, an
 * event stream that ends after an event id is resumed with a GET (SSE polling), and a 2026-07-28
 * upstream asking for input (elicitation) still gets it from the calling agent through the SDK.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { silentLogger } from '../../src/log.js';
import { Registry } from '../../src/registry/registry.js';
import type { CallContext, CallPeer, ToolResult } from '../../src/registry/types.js';
import { UpstreamManager } from '../../src/upstream/manager.js';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream.js';
import { startMoonhub, type MoonhubProcess } from '../helpers/moonhub-process.js';

class AnsweringPeer implements CallPeer {
  readonly clientCapabilities = { elicitation: {} };
  requests: string[] = [];
  progress(): boolean {
    return false;
  }
  log(): void {}
  async request(method: string): Promise<Record<string, unknown>> {
    this.requests.push(method);
    return { action: 'accept', content: { title: 'Moons' } };
  }
}

function text(r: ToolResult): string {
  return r.content.map((c) => String(c.text ?? '')).join('\n');
}

const ctx = (peer?: CallPeer, signal?: AbortSignal): CallContext => ({
  hub_id: 'test',
  peer,
  signal,
});

describe('direct path of proxied calls', () => {
  let fake: FakeUpstream;
  let upstream: MoonhubProcess;
  const registry = new Registry();
  const manager = new UpstreamManager(registry);

  before(async () => {
    fake = await startFakeUpstream();
    const dir = mkdtempSync(join(tmpdir(), 'moonhub-direct-up-'));
    writeFileSync(
      join(dir, 'ask.lua'),
      `mcp.tool("ask", { description = "asks for a title" }, function(params, context)
        local answer = context.elicit{ message = "Title?", requested_schema = {
          type = "object", properties = { title = { type = "string" } } } }
        return "titled " .. answer.content.title
      end)\n`,
    );
    upstream = await startMoonhub(['--plugins', dir]);
    for (const [owner, url, prefix] of [
      ['fake', fake.url, 'fake.'],
      ['hub', upstream.url, 'up.'],
    ] as const) {
      const proxy = await manager.proxy(owner, url, { prefix }, {}, silentLogger);
      await proxy.settle(10_000);
      assert.equal(proxy.connection.state, 'connected');
    }
  });

  after(async () => {
    await manager.stop();
    await fake?.close();
    await upstream?.stop();
  });

  it('reuses a keep-alive connection for successive calls', async () => {
    fake.mode = 'ok';
    assert.equal(text(await registry.callTool('fake.work', {}, ctx())), 'worked');
    const before = fake.connections;
    for (let i = 0; i < 10; i++)
      assert.equal(text(await registry.callTool('fake.work', {}, ctx())), 'worked');
    assert.equal(fake.connections, before, 'no new connection for ten calls');
  });

  it('tells a 2025 upstream that a call was cancelled', async () => {
    fake.mode = 'hang';
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 200);
    const r = await registry.callTool('fake.work', {}, ctx(undefined, ac.signal));
    assert.equal(r.isError, true);
    assert.match(text(r), /cancelled/);
    for (let i = 0; i < 50 && !fake.requests.includes('notifications/cancelled'); i++)
      await new Promise((res) => setTimeout(res, 20));
    assert.ok(fake.requests.includes('notifications/cancelled'));
    fake.mode = 'ok';
    assert.equal(text(await registry.callTool('fake.work', {}, ctx())), 'worked');
  });

  it('resumes an event stream that ended after an event id (SSE polling)', async () => {
    fake.mode = 'poll';
    const r = await registry.callTool('fake.work', {}, ctx());
    assert.equal(text(r), 'worked after polling');
    assert.ok(fake.requests.includes('GET last-event-id=ev-1'));
    fake.mode = 'ok';
  });

  it('lets the agent answer a 2026-07-28 upstream that asks for input', async () => {
    const peer = new AnsweringPeer();
    const r = await registry.callTool('up.ask', {}, ctx(peer));
    assert.equal(text(r), 'titled Moons');
    assert.deepEqual(peer.requests, ['elicitation/create']);
  });
});
