/**
 * The context functions over stdio (both eras, the real `moonhub serve --stdio`), and SSE polling
 * over HTTP: a 2025-11-25 call that lets go of its connection with `context.poll_later` is
 * resumed with `Last-Event-ID` and delivers everything the client missed.
 */
import { strict as assert } from 'node:assert';
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { waitFor } from '../helpers/mcp-client.js';
import { BIN, startMoonhub, type MoonhubProcess } from '../helpers/moonhub-process.js';
import { rawRequest } from '../helpers/legacy-raw.js';

const PLUGIN = String.raw`
mcp.tool("ask", { description = "asks the user, reporting progress" }, function(_, context)
  context.progress(1, 2)
  local answer = context.elicit({ key = "who", message = "Who?" })
  context.progress(2, 2)
  return { name = answer.content.name }
end)

mcp.tool("slow", { description = "lets go of the connection, then answers" }, function(_, context)
  context.progress(1, 3, "started")
  local released = context.poll_later(50)
  context.progress(2, 3, "while away")
  task.sleep(150)
  context.progress(3, 3, "done")
  return { released = released }
end)

mcp.tool("late", { description = "reports, computes without waiting, then waits" }, function(_, context)
  context.progress(1, 2, "started")
  local t, n = os.clock(), 0
  while os.clock() - t < 0.4 do n = n + 1 end
  task.sleep(20)
  context.progress(2, 2, "done")
  return { spun = n > 0 }
end)
`;

let dir: string;

before(() => {
  dir = mkdtempSync(join(tmpdir(), 'moonhub-ctx-stdio-'));
  writeFileSync(join(dir, 'ctx.lua'), PLUGIN);
});

for (const era of ['legacy', 'modern'] as const) {
  describe(`context functions over stdio (${era})`, () => {
    test('elicitation reaches the client; without the capability a clear error', async () => {
      const connect = async (caps: Record<string, object>) => {
        const client = new Client(
          { name: 'ctx-stdio', version: '1.0.0' },
          {
            capabilities: caps,
            versionNegotiation: { mode: era === 'modern' ? { pin: '2026-07-28' } : 'legacy' },
          },
        );
        if (caps.elicitation) {
          client.setRequestHandler(
            'elicitation/create',
            async () => ({ action: 'accept', content: { name: 'Kay' } }) as never,
          );
        }
        await client.connect(
          new StdioClientTransport({
            command: process.execPath,
            args: [BIN, 'serve', '--stdio', '--no-watch', '--plugins', dir],
          }),
        );
        return client;
      };
      const client = await connect({ elicitation: {} });
      try {
        const r = (await client.callTool({ name: 'ask', arguments: {} })) as {
          structuredContent?: unknown;
        };
        assert.deepEqual(r.structuredContent, { name: 'Kay' });
      } finally {
        await client.close();
      }
      const plain = await connect({});
      try {
        const r = (await plain.callTool({ name: 'ask', arguments: {} })) as {
          isError?: boolean;
          content: { text: string }[];
        };
        assert.equal(r.isError, true);
        assert.match(r.content[0]!.text, /did not declare the 'elicitation' capability/);
      } finally {
        await plain.close();
      }
    });
  });
}

test('stdio, 2025: progress, the server request and the answer go out in order', async () => {
  const child = spawn(process.execPath, [BIN, 'serve', '--stdio', '--no-watch', '--plugins', dir], {
    stdio: ['pipe', 'pipe', 'ignore'],
  });
  const lines: Record<string, unknown>[] = [];
  let buf = '';
  child.stdout.on('data', (d: Buffer) => {
    buf += d.toString();
    let nl;
    while ((nl = buf.indexOf('\n')) !== -1) {
      lines.push(JSON.parse(buf.slice(0, nl)) as Record<string, unknown>);
      buf = buf.slice(nl + 1);
    }
  });
  const send = (m: unknown) => child.stdin.write(JSON.stringify(m) + '\n');
  try {
    send({
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: {
        protocolVersion: '2025-11-25',
        capabilities: { elicitation: {} },
        clientInfo: { name: 'raw', version: '1' },
      },
    });
    send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    send({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: 'ask', arguments: {}, _meta: { progressToken: 't' } },
    });
    await waitFor(() => lines.some((l) => l.method === 'elicitation/create'), 5000, 'elicitation');
    const ask = lines.find((l) => l.method === 'elicitation/create')!;
    send({ jsonrpc: '2.0', id: ask.id, result: { action: 'accept', content: { name: 'Kay' } } });
    await waitFor(() => lines.some((l) => l.id === 1), 5000, 'the answer');
    const call = lines.filter((l) => l.id !== 0);
    assert.deepEqual(
      call.map((l) => (l.method ?? 'answer') as string),
      ['notifications/progress', 'elicitation/create', 'notifications/progress', 'answer'],
    );
    assert.deepEqual((call[3]!.result as { structuredContent: unknown }).structuredContent, {
      name: 'Kay',
    });
  } finally {
    child.kill();
  }
});

describe('SSE polling (2025-11-25 over HTTP)', () => {
  let hub: MoonhubProcess;
  before(async () => {
    hub = await startMoonhub(['--plugins', dir, '--no-watch']);
  });
  after(async () => {
    await hub.stop();
  });

  const headers = (sid?: string): Record<string, string> => ({
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': '2025-11-25',
    ...(sid ? { 'mcp-session-id': sid } : {}),
  });

  async function session(): Promise<string> {
    const res = await fetch(hub.url, {
      method: 'POST',
      headers: headers(),
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 0,
        method: 'initialize',
        params: {
          protocolVersion: '2025-11-25',
          capabilities: {},
          clientInfo: { name: 'raw', version: '1' },
        },
      }),
    });
    await res.text();
    return res.headers.get('mcp-session-id')!;
  }

  function events(text: string): { id?: string; retry?: string; data: string }[] {
    return text
      .split('\n\n')
      .filter((block) => block.trim() !== '')
      .map((block) => {
        const e: { id?: string; retry?: string; data: string } = { data: '' };
        for (const line of block.split('\n')) {
          const [field, ...rest] = line.split(': ');
          const value = rest.join(': ');
          if (field === 'id') e.id = value;
          else if (field === 'retry') e.retry = value;
          else if (field === 'data') e.data = value;
        }
        return e;
      });
  }

  test('context.poll_later ends the response; Last-Event-ID resumes to the answer', async () => {
    const sid = await session();
    const post = await fetch(hub.url, {
      method: 'POST',
      headers: headers(sid),
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 7,
        method: 'tools/call',
        params: { name: 'slow', arguments: {}, _meta: { progressToken: 'p' } },
      }),
    });
    assert.match(post.headers.get('content-type') ?? '', /text\/event-stream/);
    const first = events(await post.text());
    // Priming event (id, retry, empty data), then the first progress; no answer yet.
    assert.equal(first[0]!.data, '');
    assert.ok(first[0]!.id);
    assert.equal(first[0]!.retry, '1000');
    assert.match(first[1]!.data, /"progress":1/);
    assert.ok(!first.some((e) => e.data.includes('"id":7')));
    const last = first.filter((e) => e.id !== undefined).at(-1)!.id!;

    const resumed = await fetch(hub.url, {
      method: 'GET',
      headers: { ...headers(sid), 'last-event-id': last },
    });
    assert.equal(resumed.status, 200);
    const rest = events(await resumed.text());
    const datas = rest.map((e) => e.data);
    assert.match(datas[0]!, /"progress":2/);
    assert.match(datas[1]!, /"progress":3/);
    const answer = JSON.parse(datas[2]!);
    assert.equal(answer.id, 7);
    assert.deepEqual(answer.result.structuredContent, { released: true });

    // The stream is gone once delivered: resuming again is a clear 404.
    const again = await fetch(hub.url, {
      method: 'GET',
      headers: { ...headers(sid), 'last-event-id': last },
    });
    assert.equal(again.status, 404);
    assert.match(await again.text(), /no stream to resume/);

    // A client's long Last-Event-ID is not echoed whole in the 404 (before: all 8,000 characters).
    const long = await fetch(hub.url, {
      method: 'GET',
      headers: { ...headers(sid), 'last-event-id': `${'x'.repeat(8000)}_1` },
    });
    assert.equal(long.status, 404);
    const body = await long.text();
    assert.match(body, /no stream to resume at event x{64}\.\.\. \(8002 characters\)/);
    assert.ok(body.length < 500, `404 body of ${body.length} characters`);
  });

  test('a resumable stream dropped before its call first waits is kept for Last-Event-ID', async () => {
    // The handler looks at its cancellation signal only when it first waits (task.sleep), by
    // which time the client has gone: that late look must not cancel a resumable call.
    const sid = await session();
    const post = await rawRequest(hub.url, {
      method: 'POST',
      sessionId: sid,
      body: {
        jsonrpc: '2.0',
        id: 9,
        method: 'tools/call',
        params: { name: 'late', arguments: {}, _meta: { progressToken: 'q' } },
      },
    });
    await post.waitFor(/"progress":1/);
    const last = [...post.text().matchAll(/^id: (\S+)$/gm)].map((m) => m[1]!).at(-1)!;
    post.close();
    await new Promise((ok) => setTimeout(ok, 600));
    const resumed = await rawRequest(hub.url, {
      method: 'GET',
      sessionId: sid,
      headers: { 'Last-Event-ID': last },
    });
    assert.equal(resumed.status, 200);
    const text = await resumed.done;
    const answer = events(text)
      .map((e) => e.data)
      .filter((d) => d.includes('"id":9'))
      .map((d) => JSON.parse(d) as { result?: { structuredContent?: unknown; isError?: boolean } });
    assert.equal(answer.length, 1, text);
    assert.deepEqual(answer[0]!.result?.structuredContent, { spun: true }, text);
  });
});
