/**
 * The contract suite: the same protocol cases against every transport and era (HTTP 2026-07-28,
 * HTTP in a 2025 session, stdio in both eras), as raw JSON-RPC against the JS hub fixture. What
 * differs between transports is stated in the case (HTTP statuses, how a 2026 call is
 * cancelled); everything else must be the same, so a rule written twice cannot drift.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { HubProcess } from '../helpers/hub-process.js';
import { waitFor } from '../helpers/mcp-client.js';
import {
  ENVELOPE,
  WIRE_KINDS,
  openWire,
  startContractHub,
  type Exchange,
  type Wire,
} from '../helpers/contract-wire.js';

let hub: HubProcess;
before(async () => {
  hub = await startContractHub();
});
after(async () => hub.stop());

function errorOf(x: Exchange): { code: number; message: string; data?: unknown } {
  assert.ok(x.answer?.error, `expected an error, got ${JSON.stringify(x.all)}`);
  return x.answer.error;
}

function resultOf(x: Exchange): Record<string, unknown> {
  assert.ok(x.answer?.result, `expected a result, got ${JSON.stringify(x.all)}`);
  return x.answer.result;
}

function textOf(x: Exchange): string {
  return ((resultOf(x).content as { text: string }[])[0] ?? { text: '' }).text;
}

/** HTTP answers a refusal before dispatch with this status; stdio has none. */
function assertStatus(w: Wire, x: Exchange, status: number): void {
  assert.equal(x.status, w.transport === 'http' ? status : undefined);
}

for (const kind of WIRE_KINDS) {
  describe(`contract: ${kind}`, () => {
    let w: Wire;
    before(async () => {
      w = await openWire(kind, hub);
    });
    after(async () => w.close());

    it('handshake: the era is negotiated and the server names itself', async () => {
      if (w.era === 'legacy') {
        // openWire initialized; a ping answers inside the session.
        assert.deepEqual(resultOf(await w.request('ping')), {});
        const discover = await w.request('server/discover');
        assert.equal(errorOf(discover).code, -32601);
      } else {
        const r = resultOf(await w.request('server/discover'));
        assert.deepEqual(r.supportedVersions, ['2026-07-28']);
        assert.equal(r.resultType, 'complete');
        const meta = r._meta as Record<string, { name: string }>;
        assert.equal(meta['io.modelcontextprotocol/serverInfo']!.name, 'moonhub');
        // initialize and ping do not exist in the stateless revision.
        const ping = await w.request('ping');
        assert.equal(errorOf(ping).code, -32601);
        assertStatus(w, ping, 404);
      }
    });

    it('lists: pages with opaque cursors; a foreign cursor is -32602', async () => {
      const first = resultOf(await w.request('tools/list'));
      assert.equal((first.tools as unknown[]).length, 5);
      assert.equal(typeof first.nextCursor, 'string');
      const second = resultOf(await w.request('tools/list', { cursor: first.nextCursor }));
      assert.ok((second.tools as unknown[]).length > 0);
      const bad = await w.request('tools/list', { cursor: 'nope' });
      assert.equal(errorOf(bad).code, -32602);
      assert.equal(errorOf(bad).message, 'Invalid cursor');
      assert.ok((resultOf(await w.request('prompts/list')).prompts as unknown[]).length > 0);
      assert.ok((resultOf(await w.request('resources/list')).resources as unknown[]).length > 0);
      const templates = resultOf(await w.request('resources/templates/list'));
      assert.ok((templates.resourceTemplates as unknown[]).length > 0);
    });

    it('calls: tools, prompts and resources, and their errors', async () => {
      assert.equal(
        textOf(await w.request('tools/call', { name: 'add', arguments: { a: 1, b: 2 } })),
        '3',
      );
      const unknown = await w.request('tools/call', { name: 'nope', arguments: {} });
      assert.deepEqual(errorOf(unknown), { code: -32602, message: 'Unknown tool: nope' });
      const badArgs = await w.request('tools/call', { name: 'add', arguments: [1, 2] });
      assert.equal(errorOf(badArgs).code, -32602);
      const invalid = await w.request('tools/call', { name: 'add', arguments: { a: 'x' } });
      assert.equal(resultOf(invalid).isError, true, 'schema mismatch is a tool error');
      const prompt = resultOf(
        await w.request('prompts/get', { name: 'greet', arguments: { name: 'Bo' } }),
      );
      assert.deepEqual((prompt.messages as { content: unknown }[])[0]!.content, {
        type: 'text',
        text: 'Hello, Bo!',
      });
      const note = resultOf(await w.request('resources/read', { uri: 'note://7' }));
      assert.equal((note.contents as { text: string }[])[0]!.text, 'note 7');
      const missing = errorOf(await w.request('resources/read', { uri: 'none://x' }));
      // 2026-07-28 made an unknown resource -32602; the 2025 revisions answer -32002.
      assert.equal(missing.code, w.era === 'modern' ? -32602 : -32002);
      assert.deepEqual(missing.data, { uri: 'none://x' });
    });

    it('errors: an unknown method is -32601 and the hub keeps serving', async () => {
      const x = await w.request('no/such/method');
      assert.deepEqual(errorOf(x), { code: -32601, message: 'Method not found: no/such/method' });
      if (w.era === 'modern') assertStatus(w, x, 404);
      assert.equal(
        textOf(await w.request('tools/call', { name: 'echo', arguments: { text: 'ok' } })),
        'ok',
      );
    });

    it('bad input: invalid JSON is -32700, a non-JSON-RPC value -32600', async () => {
      const parse = await w.raw('{not json');
      assert.equal(errorOf(parse).code, -32700);
      assert.equal(parse.answer?.id, null);
      assertStatus(w, parse, 400);
      const invalid = await w.raw(JSON.stringify({ id: 2 }));
      assert.equal(errorOf(invalid).code, -32600);
      assert.equal(invalid.answer?.id, 2);
      assertStatus(w, invalid, 400);
      const afterwards = await w.request('tools/call', {
        name: 'echo',
        arguments: { text: 'still' },
      });
      assert.equal(textOf(afterwards), 'still');
    });

    it('batches: refused unless a 2025-03-26 session; never with initialize or 2026 members', async () => {
      const ping = (id: number) => ({ jsonrpc: '2.0', id, method: 'ping' });
      const cases: [unknown[], RegExp][] = [
        [[], /empty JSON-RPC batch/],
        [
          [{ jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: ENVELOPE } }],
          /may not carry 2026-07-28 requests/,
        ],
        [
          [ping(1), { jsonrpc: '2.0', id: 2, method: 'initialize', params: {} }],
          /initialize may not be part of a batch/,
        ],
        [[ping(1), ping(2)], /not supported on protocol revision 2025-11-25/],
      ];
      for (const [batch, message] of cases) {
        // A 2026 wire has no session, so a plain batch is refused for that instead.
        if (w.era === 'modern' && message.source.includes('2025-11-25')) continue;
        const x = await w.raw(JSON.stringify(batch));
        assert.equal(errorOf(x).code, -32600, JSON.stringify(batch));
        assert.match(errorOf(x).message, message);
        assert.equal(x.answer?.id, null);
        assertStatus(w, x, 400);
      }
      if (w.era === 'legacy') {
        const old = await openWire(kind, hub, '2025-03-26');
        try {
          const x = await old.raw(
            JSON.stringify([
              ping(1),
              { jsonrpc: '2.0', method: 'notifications/initialized' },
              ping(2),
              { id: 3 },
            ]),
          );
          assert.deepEqual(
            x.all.map((m) => [m.id, m.result ?? m.error?.code]),
            [
              [1, {}],
              [2, {}],
              [3, -32600],
            ],
          );
        } finally {
          await old.close();
        }
      }
    });

    it('notifications: list_changed reaches the era’s channel', async () => {
      const watch = await w.watch();
      try {
        // Let the stream open before the change.
        await new Promise((r) => setTimeout(r, 100));
        await w.request('tools/call', { name: 'add_tool', arguments: {} });
        await waitFor(
          () => watch.heard.includes('notifications/tools/list_changed'),
          10_000,
          `tools/list_changed on ${w.name}`,
        );
        if (w.era === 'modern')
          assert.ok(watch.heard.includes('notifications/subscriptions/acknowledged'));
      } finally {
        watch.close();
      }
    });

    it('progress: a call’s progress goes out before its answer', async () => {
      const x = await w.request('tools/call', {
        name: 'progress',
        arguments: {},
        _meta: { progressToken: 'p1' },
      });
      assert.equal(textOf(x), 'progressed');
      const progress = x.all.filter((m) => m.method === 'notifications/progress');
      assert.deepEqual(
        progress.map((m) => [m.params?.progressToken, m.params?.progress, m.params?.message]),
        [
          ['p1', 1, 'half'],
          ['p1', 2, 'done'],
        ],
      );
      assert.equal(x.all.at(-1), x.answer, 'the answer comes last');
    });

    it('cancellation: the era’s cancel aborts the handler', async () => {
      const before = w.aborted();
      const call = w.cancellable('tools/call', { name: 'slow', arguments: { ms: 20_000 } }, 'c1');
      await new Promise((r) => setTimeout(r, 150));
      await call.cancel();
      await waitFor(() => w.aborted() > before, 10_000, `slow aborted on ${w.name}`);
      const answer = await call.answer;
      // Over HTTP 2026 the connection is gone, so there is no answer to read.
      if (answer !== undefined) assert.equal(textOf(answer), 'aborted');
    });
  });
}
