/**
 * Traces across two real hubs: an OTLP/HTTP (JSON) receiver of our own collects the spans of a
 * hub and of the moonhub it proxies. One client call of a proxied tool, with a W3C traceparent
 * in the HTTP header or in params._meta, yields one trace: the hub's SERVER span (child of the
 * caller's), its handler span, its CLIENT span to the upstream, and the upstream's SERVER span
 * under that CLIENT span; MCP semantic-convention attributes on them.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startMoonhub, type MoonhubProcess } from '../helpers/moonhub-process.js';
import { makeHubDir } from '../helpers/auth-hub.js';
import { connectHttpClient } from '../helpers/mcp-client.js';

interface Span {
  service: string;
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes: Record<string, unknown>;
}

const SERVER = 2;
const CLIENT = 3;

/** An OTLP/HTTP JSON trace receiver: POST /v1/traces. */
async function startReceiver(): Promise<{ url: string; spans: Span[]; server: Server }> {
  const spans: Span[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.url === '/v1/traces' && req.headers['content-type']?.includes('json')) {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
          resourceSpans: {
            resource: { attributes: { key: string; value: { stringValue?: string } }[] };
            scopeSpans: { spans: Omit<Span, 'service' | 'attributes'>[] }[];
          }[];
        };
        for (const rs of body.resourceSpans) {
          const service =
            rs.resource.attributes.find((a) => a.key === 'service.name')?.value.stringValue ?? '';
          for (const ss of rs.scopeSpans)
            for (const s of ss.spans) {
              const attrs =
                (s as unknown as { attributes?: { key: string; value: Record<string, unknown> }[] })
                  .attributes ?? [];
              spans.push({
                ...s,
                service,
                attributes: Object.fromEntries(
                  attrs.map((a) => [a.key, Object.values(a.value)[0]]),
                ),
              });
            }
        }
      }
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end('{}');
    });
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, spans, server };
}

async function waitForSpans(spans: Span[], traceId: string, count: number): Promise<Span[]> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const mine = spans.filter((s) => s.traceId === traceId);
    if (mine.length >= count) return mine;
    if (Date.now() > deadline)
      throw new Error(`got ${mine.length} spans of ${traceId}: ${JSON.stringify(spans, null, 1)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const hex = (n: number) => randomBytes(n).toString('hex');

describe('traces across a hub and its upstream moonhub', () => {
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let upstream: MoonhubProcess;
  let hub: MoonhubProcess;

  before(async () => {
    receiver = await startReceiver();
    const env = (name: string) => ({
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_SERVICE_NAME: name,
      OTEL_BSP_SCHEDULE_DELAY: '100',
    });
    const up = makeHubDir({ greeter: `mcp.tool("greet", {}, function() return "hello" end)` });
    upstream = await startMoonhub(['--plugins', up.plugins, '--no-watch'], env('upstream-hub'));
    const down = makeHubDir({
      up: `assert(mcp.proxy(${JSON.stringify(upstream.url)}, { prefix = "u." }))`,
      nest: `mcp.tool("nest.greet", {}, function(params, context)
        task.sleep(5)
        local content, err = mcp.call_tool("u.greet", {}, context)
        return { text = content and content[1].text or err }
      end)`,
    });
    hub = await startMoonhub(['--plugins', down.plugins, '--no-watch'], env('front-hub'));
  });

  after(async () => {
    await hub?.stop();
    await upstream?.stop();
    receiver?.server.close();
  });

  function checkTrace(spans: Span[], traceId: string, callerSpan: string): void {
    const front = spans.find((s) => s.service === 'front-hub' && s.kind === SERVER)!;
    assert.ok(front, 'the front hub has a SERVER span');
    assert.equal(front.name, 'tools/call u.greet');
    assert.equal(front.parentSpanId, callerSpan, "the caller's traceparent is the parent");
    assert.equal(front.attributes['mcp.method.name'], 'tools/call');
    assert.equal(front.attributes['gen_ai.tool.name'], 'u.greet');
    const handler = spans.find(
      (s) => s.service === 'front-hub' && s.name === 'execute_tool u.greet',
    );
    assert.equal(handler?.parentSpanId, front.spanId);
    const client = spans.find((s) => s.service === 'front-hub' && s.kind === CLIENT)!;
    assert.equal(client.name, 'tools/call greet');
    assert.equal(client.parentSpanId, handler?.spanId);
    const back = spans.find((s) => s.service === 'upstream-hub' && s.kind === SERVER)!;
    assert.ok(back, 'the upstream hub has a SERVER span');
    assert.equal(back.name, 'tools/call greet');
    assert.equal(back.parentSpanId, client.spanId, 'the upstream continues the CLIENT span');
    for (const s of spans) assert.equal(s.traceId, traceId);
  }

  it('joins the trace of an HTTP traceparent header', async () => {
    const traceId = hex(16);
    const parent = hex(8);
    await new Promise((r) => setImmediate(r));
    const res = await fetch(hub.url, {
      method: 'POST',
      headers: {
        'Content-Type': 'application/json',
        Accept: 'application/json, text/event-stream',
        'MCP-Protocol-Version': '2026-07-28',
        'Mcp-Method': 'tools/call',
        'Mcp-Name': 'u.greet',
        traceparent: `00-${traceId}-${parent}-01`,
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: {
          name: 'u.greet',
          arguments: {},
          _meta: {
            'io.modelcontextprotocol/protocolVersion': '2026-07-28',
            'io.modelcontextprotocol/clientCapabilities': {},
          },
        },
      }),
    });
    assert.equal(res.status, 200);
    assert.match(await res.text(), /hello/);
    checkTrace(await waitForSpans(receiver.spans, traceId, 5), traceId, parent);
  });

  it('joins the trace of a traceparent in params._meta (2025 session, SDK client)', async () => {
    const traceId = hex(16);
    const parent = hex(8);
    const { client } = await connectHttpClient(hub.url, 'legacy');
    try {
      const r = await client.callTool({
        name: 'u.greet',
        arguments: {},
        _meta: { traceparent: `00-${traceId}-${parent}-01` },
      });
      assert.notEqual(r.isError, true);
    } finally {
      await client.close();
    }
    const spans = await waitForSpans(receiver.spans, traceId, 5);
    checkTrace(spans, traceId, parent);
    const front = spans.find((s) => s.service === 'front-hub' && s.kind === SERVER)!;
    assert.equal(typeof front.attributes['mcp.session.id'], 'string');
  });

  it("nests a Lua handler's mcp.call_tool span under the handler, across a yield", async () => {
    const traceId = hex(16);
    const parent = hex(8);
    const { client } = await connectHttpClient(hub.url, 'modern');
    try {
      const r = await client.callTool({
        name: 'nest.greet',
        arguments: {},
        _meta: { traceparent: `00-${traceId}-${parent}-01` },
      });
      assert.match(JSON.stringify(r.structuredContent), /hello/);
    } finally {
      await client.close();
    }
    const spans = await waitForSpans(receiver.spans, traceId, 6);
    const by = (name: string, service = 'front-hub') =>
      spans.find((s) => s.name === name && s.service === service);
    const outer = by('execute_tool nest.greet');
    const inner = by('execute_tool u.greet');
    assert.equal(outer?.parentSpanId, by('tools/call nest.greet')?.spanId);
    assert.equal(inner?.parentSpanId, outer?.spanId, 'the nested call is a child of its caller');
    assert.equal(by('tools/call greet')?.parentSpanId, inner?.spanId);
    assert.ok(by('tools/call greet', 'upstream-hub'));
  });
});
