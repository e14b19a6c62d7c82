/**
 * The relay between an agent's call and the upstream, in process: a Registry with a proxy to a
 * real server-everything, and a CallPeer (the interface the transports implement) standing for
 * the calling agent. Progress, cancellation, sampling and elicitation pass through with the
 * upstream's ids and tokens mapped onto the agent's.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { silentLogger } from '../../src/log.js';
import { Registry } from '../../src/registry/registry.js';
import type { CallContext, CallPeer, ToolResult } from '../../src/registry/types.js';
import { UpstreamManager } from '../../src/upstream/manager.js';
import { startEverythingHttp, type HttpUpstream } from '../helpers/everything.js';

class RecordingPeer implements CallPeer {
  readonly clientCapabilities = { sampling: {}, elicitation: {} };
  progressed: [number, number | undefined, string | undefined][] = [];
  logged: unknown[] = [];
  requests: [string, Record<string, unknown>][] = [];
  progress(progress: number, total?: number, message?: string): boolean {
    this.progressed.push([progress, total, message]);
    return true;
  }
  log(_level: string, data: unknown): void {
    this.logged.push(data);
  }
  async request(method: string, params: Record<string, unknown>): Promise<Record<string, unknown>> {
    this.requests.push([method, params]);
    if (method === 'sampling/createMessage')
      return { role: 'assistant', model: 'stand-in', content: { type: 'text', text: 'sampled!' } };
    return { action: 'accept', content: { color: 'red', number: 7, pets: 'cats' } };
  }
}

function text(r: ToolResult): string {
  return r.content.map((c) => String(c.text ?? '')).join('\n');
}

describe('relay between agent and upstream', () => {
  let upstream: HttpUpstream;
  const registry = new Registry();
  const manager = new UpstreamManager(registry);

  before(async () => {
    upstream = await startEverythingHttp();
    const proxy = await manager.proxy('relay', upstream.url, { prefix: 'ev.' }, {}, silentLogger);
    await proxy.settle(10_000);
    assert.equal(proxy.connection.state, 'connected');
  });
  after(async () => {
    await manager.stop();
    await upstream?.stop();
  });

  const ctx = (peer: CallPeer, signal?: AbortSignal): CallContext => ({
    hub_id: 'test',
    peer,
    signal,
  });

  it('relays progress notifications to the calling agent', async () => {
    const peer = new RecordingPeer();
    const r = await registry.callTool(
      'ev.trigger-long-running-operation',
      { duration: 1, steps: 4 },
      ctx(peer),
    );
    assert.match(text(r), /completed/);
    assert.deepEqual(
      peer.progressed.map(([p, t]) => [p, t]),
      [
        [1, 4],
        [2, 4],
        [3, 4],
        [4, 4],
      ],
    );
  });

  it('cancels the upstream call when the agent cancels', async () => {
    const peer = new RecordingPeer();
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 300);
    const start = Date.now();
    const r = await registry.callTool(
      'ev.trigger-long-running-operation',
      { duration: 5, steps: 5 },
      ctx(peer, ac.signal),
    );
    assert.equal(r.isError, true);
    assert.match(text(r), /cancel/);
    assert.ok(Date.now() - start < 3000);
  });

  it('relays a sampling request to the agent and its answer back', async () => {
    const peer = new RecordingPeer();
    const r = await registry.callTool(
      'ev.trigger-sampling-request',
      { prompt: 'say hi', maxTokens: 10 },
      ctx(peer),
    );
    assert.equal(peer.requests[0]?.[0], 'sampling/createMessage');
    assert.equal(peer.requests[0]?.[1]._meta, undefined, "the upstream's meta stays behind");
    assert.match(text(r), /sampled!/);
  });

  it('relays an elicitation request to the agent and its answer back', async () => {
    const peer = new RecordingPeer();
    const r = await registry.callTool('ev.trigger-elicitation-request', {}, ctx(peer));
    assert.equal(peer.requests[0]?.[0], 'elicitation/create');
    assert.ok(peer.requests[0]?.[1].requestedSchema);
    assert.match(text(r), /accept/i);
  });

  it('answers an upstream request with an error when no caller can take it', async () => {
    const peer = new RecordingPeer();
    (peer as { clientCapabilities: Record<string, unknown> }).clientCapabilities = {};
    const r = await registry.callTool(
      'ev.trigger-sampling-request',
      { prompt: 'x', maxTokens: 5 },
      ctx(peer),
    );
    assert.equal(peer.requests.length, 0);
    assert.equal(r.isError, true);
  });
});
