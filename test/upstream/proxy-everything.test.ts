/**
 * mcp.proxy end to end: a real moonhub process proxies server-everything over Streamable HTTP
 * (prefix "ev.") and over stdio (prefix "evs.", include filter), and an SDK client in both eras
 * reaches the upstream's tools, prompts, resources and templates through the hub.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/client';
import { connectHttpClient } from '../helpers/mcp-client.js';
import { startMoonhub, type MoonhubProcess } from '../helpers/moonhub-process.js';
import { EVERYTHING_STDIO, startEverythingHttp, type HttpUpstream } from '../helpers/everything.js';

type Text = { type: string; text?: string; mimeType?: string; data?: string };

function text(result: unknown): string {
  return ((result as { content: Text[] }).content ?? []).map((c) => c.text ?? '').join('\n');
}

describe('mcp.proxy against server-everything', () => {
  let upstream: HttpUpstream;
  let sse: HttpUpstream;
  let hub: MoonhubProcess;

  before(async () => {
    upstream = await startEverythingHttp();
    sse = await startEverythingHttp(0, 'sse');
    const dir = mkdtempSync(join(tmpdir(), 'moonhub-proxy-'));
    writeFileSync(
      join(dir, 'ev.lua'),
      `assert(mcp.proxy(${JSON.stringify(upstream.url)}, { prefix = "ev." }))\n` +
        `assert(mcp.proxy(${JSON.stringify(sse.url)}, { prefix = "old.", include = { "echo" } }))\n` +
        `assert(mcp.proxy(${JSON.stringify(EVERYTHING_STDIO)}, { prefix = "evs.", include = { "echo", "get-*" }, exclude = { "get-structured-content" }, env = { MOONHUB_TEST_ENV = "from-the-proxy" } }))\n`,
    );
    hub = await startMoonhub(['--plugins', dir]);
  });

  after(async () => {
    await hub?.stop();
    await upstream?.stop();
    await sse?.stop();
  });

  for (const era of ['legacy', 'modern'] as const) {
    describe(`through the hub (${era} client)`, () => {
      let client: Client;
      before(async () => {
        ({ client } = await connectHttpClient(hub.url, era));
      });
      after(async () => {
        await client?.close();
      });

      it('lists the imported tools with their prefixes and filters', async () => {
        const names = (await client.listTools()).tools.map((t) => t.name);
        for (const n of [
          'ev.echo',
          'ev.get-sum',
          'ev.get-structured-content',
          'ev.get-tiny-image',
          'ev.trigger-long-running-operation',
          'evs.echo',
          'evs.get-sum',
          'evs.get-tiny-image',
          'hub_status',
        ])
          assert.ok(names.includes(n), `${n} in ${names.join(', ')}`);
        assert.ok(!names.includes('evs.get-structured-content'), 'exclude wins over include');
        assert.ok(!names.includes('evs.trigger-long-running-operation'), 'include filters');
        const sum = (await client.listTools()).tools.find((t) => t.name === 'ev.get-sum');
        assert.deepEqual(Object.keys((sum?.inputSchema.properties ?? {}) as object).sort(), [
          'a',
          'b',
        ]);
      });

      it('calls an old HTTP+SSE server', async () => {
        assert.equal(
          text(await client.callTool({ name: 'old.echo', arguments: { message: 'sse' } })),
          'Echo: sse',
        );
      });

      it('calls echo and get-sum over HTTP and stdio', async () => {
        assert.equal(
          text(await client.callTool({ name: 'ev.echo', arguments: { message: 'hi' } })),
          'Echo: hi',
        );
        assert.equal(
          text(await client.callTool({ name: 'evs.echo', arguments: { message: 'yo' } })),
          'Echo: yo',
        );
        assert.match(
          text(await client.callTool({ name: 'ev.get-sum', arguments: { a: 2, b: 3 } })),
          /\b5\b/,
        );
        assert.match(
          text(await client.callTool({ name: 'evs.get-sum', arguments: { a: 40, b: 2 } })),
          /\b42\b/,
        );
      });

      it('starts the stdio child with the env option', async () => {
        const r = await client.callTool({ name: 'evs.get-env', arguments: {} });
        assert.match(text(r), /MOONHUB_TEST_ENV.{0,5}from-the-proxy/);
      });

      it('passes structured content and images through', async () => {
        const r = (await client.callTool({
          name: 'ev.get-structured-content',
          arguments: { location: 'Chicago' },
        })) as { structuredContent?: { temperature?: unknown; conditions?: unknown } };
        assert.equal(typeof r.structuredContent?.temperature, 'number');
        assert.equal(typeof r.structuredContent?.conditions, 'string');
        const img = (await client.callTool({ name: 'ev.get-tiny-image', arguments: {} })) as {
          content: Text[];
        };
        const item = img.content.find((c) => c.type === 'image');
        assert.equal(item?.mimeType, 'image/png');
        assert.ok(
          Buffer.from(item?.data ?? '', 'base64')
            .subarray(1, 4)
            .toString() === 'PNG',
        );
      });

      it('runs a long operation (the upstream reports progress) to completion', async () => {
        const r = await client.callTool({
          name: 'ev.trigger-long-running-operation',
          arguments: { duration: 1, steps: 3 },
        });
        assert.match(text(r), /Long running operation completed/);
      });

      it('imports prompts, resources and templates', async () => {
        const prompts = (await client.listPrompts()).prompts.map((p) => p.name);
        assert.ok(prompts.includes('ev.simple-prompt'), prompts.join(', '));
        const got = await client.getPrompt({ name: 'ev.simple-prompt', arguments: {} });
        assert.ok(got.messages.length > 0);
        const args = await client.getPrompt({
          name: 'ev.args-prompt',
          arguments: { city: 'Paris' },
        });
        assert.match(JSON.stringify(args.messages), /Paris/);

        const resources = (await client.listResources()).resources;
        assert.ok(resources.length > 0, 'some fixed resources');
        const read = await client.readResource({ uri: resources[0]!.uri });
        assert.ok(read.contents.length > 0);

        const templates = (await client.listResourceTemplates()).resourceTemplates.map(
          (t) => t.uriTemplate,
        );
        const textTemplate = templates.find((t) => t.includes('/dynamic/text/'));
        assert.ok(textTemplate, templates.join(', '));
        const dyn = await client.readResource({ uri: textTemplate.replace(/\{[^}]+\}/, '7') });
        assert.match(JSON.stringify(dyn.contents), /7/);
      });

      it('reports the upstreams in hub_status', async () => {
        const r = (await client.callTool({ name: 'hub_status', arguments: {} })) as {
          structuredContent: { upstreams: { url: string; state: string; pid?: number }[] };
        };
        const ups = r.structuredContent.upstreams;
        assert.equal(ups.length, 3);
        assert.ok(ups.every((u) => u.state === 'connected'));
        assert.equal(typeof ups.find((u) => u.url.startsWith('stdio:'))?.pid, 'number');
      });
    });
  }

  it('kills the stdio child when the hub stops', async () => {
    const { client } = await connectHttpClient(hub.url, 'legacy');
    const r = (await client.callTool({ name: 'hub_status', arguments: {} })) as {
      structuredContent: { upstreams: { pid?: number }[] };
    };
    await client.close();
    const pid = r.structuredContent.upstreams.find((u) => u.pid)?.pid;
    assert.ok(pid);
    process.kill(pid, 0); // alive now
    await hub.stop();
    const deadline = Date.now() + 5000;
    let alive = true;
    while (alive && Date.now() < deadline) {
      try {
        process.kill(pid, 0);
        await new Promise((res) => setTimeout(res, 50));
      } catch {
        alive = false;
      }
    }
    assert.equal(alive, false, 'the stdio child is gone after the hub stopped');
  });
});
