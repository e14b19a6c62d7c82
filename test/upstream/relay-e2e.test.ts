/**
 * The relay end to end: an SDK client (the agent) calls server-everything's tools through a real
 * moonhub process and sees the upstream's progress, and answers its sampling and elicitation
 * requests, through the transports' CallPeer.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { startMoonhub, type MoonhubProcess } from '../helpers/moonhub-process.js';
import { startEverythingHttp, type HttpUpstream } from '../helpers/everything.js';

function text(result: unknown): string {
  return ((result as { content: { text?: string }[] }).content ?? [])
    .map((c) => c.text ?? '')
    .join('\n');
}

describe('relay through a moonhub process', () => {
  let upstream: HttpUpstream;
  let hub: MoonhubProcess;
  let client: Client;

  before(async () => {
    upstream = await startEverythingHttp();
    const dir = mkdtempSync(join(tmpdir(), 'moonhub-relay-'));
    writeFileSync(
      join(dir, 'ev.lua'),
      `assert(mcp.proxy(${JSON.stringify(upstream.url)}, { prefix = "ev." }))\n`,
    );
    hub = await startMoonhub(['--plugins', dir]);
    client = new Client(
      { name: 'relay-agent', version: '1.0.0' },
      { capabilities: { sampling: {}, elicitation: {} } },
    );
    client.setRequestHandler('sampling/createMessage', async () => ({
      role: 'assistant',
      model: 'agent',
      content: { type: 'text', text: 'sampled by the agent' },
    }));
    client.setRequestHandler('elicitation/create', async () => ({
      action: 'accept',
      content: { color: 'red', number: 7, pets: 'cats' },
    }));
    await client.connect(new StreamableHTTPClientTransport(new URL(hub.url)));
  });

  after(async () => {
    await client?.close();
    await hub?.stop();
    await upstream?.stop();
  });

  it('passes the upstream progress to the agent', async () => {
    const seen: number[] = [];
    const r = await client.callTool(
      { name: 'ev.trigger-long-running-operation', arguments: { duration: 1, steps: 4 } },
      { onprogress: (p) => seen.push(p.progress) },
    );
    assert.match(text(r), /completed/);
    assert.deepEqual(seen, [1, 2, 3, 4]);
  });

  it('lets the agent answer the upstream sampling request', async () => {
    const r = await client.callTool({
      name: 'ev.trigger-sampling-request',
      arguments: { prompt: 'hi', maxTokens: 5 },
    });
    assert.match(text(r), /sampled by the agent/);
  });

  it('lets the agent answer the upstream elicitation request', async () => {
    const r = await client.callTool({ name: 'ev.trigger-elicitation-request', arguments: {} });
    assert.match(text(r), /User provided the requested information/);
  });

  it('keeps hub and upstream serving after the agent cancels a call', async () => {
    const ac = new AbortController();
    const started = Date.now();
    setTimeout(() => ac.abort(), 300);
    await assert.rejects(
      client.callTool(
        { name: 'ev.trigger-long-running-operation', arguments: { duration: 5, steps: 5 } },
        { signal: ac.signal },
      ),
    );
    assert.ok(Date.now() - started < 3000);
    // The hub is still serving, and the upstream too.
    assert.equal(
      text(await client.callTool({ name: 'ev.echo', arguments: { message: 'after' } })),
      'Echo: after',
    );
  });
});
