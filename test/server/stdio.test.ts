/**
 * stdio's own details: raw lines (split across writes, blank, junk) must never break the stream,
 * and only JSON-RPC reaches stdout. The protocol cases over stdio in both eras are the contract
 * suite's (test/contract/); the SDK client over stdio is exercised by the e2e tests.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { describe, it } from 'node:test';
import { FIXTURE } from '../helpers/hub-process.js';
import { waitFor } from '../helpers/mcp-client.js';

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
