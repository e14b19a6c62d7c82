/**
 * stdio serving, driven by the SDK v2 client's stdio transport against the JS hub fixture: the
 * 2025 handshake, lists, calls, list_changed on stdout, a pinned 2026-07-28 client, and raw lines
 * that must never break the stream.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { FIXTURE } from '../helpers/hub-process.js';
import { waitFor } from '../helpers/mcp-client.js';

async function connect(mode: 'legacy' | 'modern') {
  const events = { tools: 0, prompts: 0, resources: 0 };
  const client = new Client(
    { name: 'stdio-test', version: '1.0.0' },
    {
      versionNegotiation: { mode: mode === 'modern' ? { pin: '2026-07-28' } : 'legacy' },
      listChanged: {
        tools: { onChanged: () => void events.tools++, autoRefresh: false, debounceMs: 0 },
        prompts: { onChanged: () => void events.prompts++, autoRefresh: false, debounceMs: 0 },
        resources: { onChanged: () => void events.resources++, autoRefresh: false, debounceMs: 0 },
      },
    },
  );
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [FIXTURE, 'stdio', '5'],
  });
  await client.connect(transport);
  return { client, events };
}

for (const mode of ['legacy', 'modern'] as const) {
  describe(`stdio, ${mode} era`, () => {
    it('lists, calls, reads, and hears list_changed', async () => {
      const { client, events } = await connect(mode);
      try {
        assert.equal(client.getServerVersion()?.name, 'moonhub');
        const tools = await client.listTools();
        assert.ok(tools.tools.length > 5, 'all pages aggregated');
        const r = await client.callTool({ name: 'add', arguments: { a: 1, b: 2 } });
        assert.deepEqual(r.content, [{ type: 'text', text: '3' }]);
        const note = await client.readResource({ uri: 'note://7' });
        assert.equal((note.contents[0] as { text: string }).text, 'note 7');
        const p = await client.getPrompt({ name: 'greet', arguments: { name: 'Bo' } });
        assert.deepEqual(p.messages[0]!.content, { type: 'text', text: 'Hello, Bo!' });
        await assert.rejects(
          client.callTool({ name: 'nope', arguments: {} }),
          (e) => (e as { code?: number }).code === -32602,
        );
        await client.callTool({ name: 'add_tool', arguments: {} });
        await waitFor(
          () => events.tools > 0 && events.prompts > 0 && events.resources > 0,
          5000,
          'list_changed over stdio',
        );
        const after = await client.listTools();
        assert.ok(after.tools.some((t) => t.name === 'dynamic_1'));
      } finally {
        await client.close();
      }
    });
  });
}

describe('stdio, raw lines', () => {
  it('answers junk with JSON-RPC errors on stdout only, and keeps serving', async () => {
    const child = spawn(process.execPath, [FIXTURE, 'stdio'], { stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    const lines = [
      'not json',
      '{"jsonrpc":"2.0","id":1,"method":"nope"}',
      '{"id":2}',
      '[{"jsonrpc":"2.0","id":3,"method":"ping"}]',
      '{"jsonrpc":"2.0","id":4,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}',
      '',
      '{"jsonrpc":"2.0","id":5,"method":"ping"}',
    ];
    // Split a line across writes to check reassembly.
    child.stdin.write(lines.join('\n').slice(0, 30));
    await new Promise((r) => setTimeout(r, 20));
    child.stdin.write(lines.join('\n').slice(30) + '\n');
    try {
      await waitFor(() => out.split('\n').filter(Boolean).length >= 6, 5000, 'six replies');
      const replies = out
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as { id: unknown; error?: { code: number }; result?: unknown });
      const byId = new Map(replies.map((r) => [JSON.stringify(r.id), r]));
      assert.ok(replies.some((r) => r.id === null && r.error?.code === -32700));
      assert.equal(byId.get('1')?.error?.code, -32601);
      assert.equal(byId.get('2')?.error?.code, -32600);
      assert.ok(
        replies.some((r) => r.id === null && r.error?.code === -32600),
        'batch refused before a 2025-03-26 session',
      );
      assert.equal(
        (byId.get('4')?.result as { protocolVersion: string }).protocolVersion,
        '2025-06-18',
      );
      assert.deepEqual(byId.get('5')?.result, {});
    } finally {
      child.kill();
    }
  });
});
