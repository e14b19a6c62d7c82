/**
 * The dispatcher and its helpers in-process: constants against the SDK's, cursors, the view and
 * fan-out hooks, cancellation, and error mapping.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import * as sdk from '@modelcontextprotocol/server';
import { Registry } from '../../src/registry/registry.js';
import type { HandlerError } from '../../src/registry/errors.js';
import {
  createMcpDispatcher,
  newSessionState,
  type RequestScope,
} from '../../src/server/dispatcher.js';
import { RequestChannel } from '../../src/server/channel.js';
import { ListChangedFanout } from '../../src/server/list-changed.js';
import { decodeCursor, encodeCursor, paginate } from '../../src/server/pagination.js';
import * as protocol from '../../src/server/protocol.js';
import { createRequestGuard } from '../../src/server/origin.js';

function registryWith(n: number): Registry {
  const r = new Registry({ hubId: 'unit' });
  for (let i = 0; i < n; i++) {
    r.addTool(i % 2 ? 'odd' : 'even', {
      name: `t${String(i).padStart(3, '0')}`,
      description: 'x',
      inputSchema: { type: 'object' },
      handler: async () => ({ content: [{ type: 'text', text: String(i) }] }),
    });
  }
  return r;
}

const legacy = (): RequestScope => ({
  era: 'legacy',
  protocolVersion: '2025-11-25',
  session: newSessionState('s1'),
});
const modern: RequestScope = {
  era: 'modern',
  protocolVersion: '2026-07-28',
  session: undefined,
  clientCapabilities: {},
};

describe('protocol constants', () => {
  it('match the SDK v2 exports', () => {
    assert.equal(protocol.PROTOCOL_VERSION_META_KEY, sdk.PROTOCOL_VERSION_META_KEY);
    assert.equal(protocol.CLIENT_CAPABILITIES_META_KEY, sdk.CLIENT_CAPABILITIES_META_KEY);
    assert.equal(protocol.CLIENT_INFO_META_KEY, sdk.CLIENT_INFO_META_KEY);
    assert.equal(protocol.SERVER_INFO_META_KEY, sdk.SERVER_INFO_META_KEY);
    assert.equal(protocol.SUBSCRIPTION_ID_META_KEY, sdk.SUBSCRIPTION_ID_META_KEY);
    assert.equal(protocol.LATEST_LEGACY_VERSION, sdk.LATEST_PROTOCOL_VERSION);
    for (const v of protocol.LEGACY_PROTOCOL_VERSIONS)
      assert.ok(sdk.SUPPORTED_PROTOCOL_VERSIONS.includes(v), v);
  });
});

describe('pagination', () => {
  it('walks a list by key cursors and rejects foreign cursors', () => {
    const list = Array.from({ length: 23 }, (_, i) => ({ name: `n${String(i).padStart(2, '0')}` }));
    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const page = paginate(list, (x) => x.name, cursor, 10);
      seen.push(...page.items.map((x) => x.name));
      cursor = page.nextCursor;
    } while (cursor);
    assert.deepEqual(
      seen,
      list.map((x) => x.name),
    );
    assert.equal(decodeCursor(encodeCursor('n09')), 'n09');
    for (const bad of [
      '',
      'abc',
      42,
      Buffer.from('k2:x').toString('base64url'),
      encodeCursor('x') + '=',
    ]) {
      assert.throws(
        () => paginate(list, (x) => x.name, bad, 10),
        (e: { code?: number }) => e.code === -32602,
      );
    }
  });
});

describe('dispatcher', () => {
  it('pages tools/list and stamps 2026 results', async () => {
    const d = createMcpDispatcher(registryWith(12), { pageSize: 5 });
    const first = JSON.parse(
      await d.handleRequest({ jsonrpc: '2.0', id: 1, method: 'tools/list' }, modern),
    ) as {
      result: { tools: unknown[]; nextCursor: string; resultType: string; ttlMs: number };
    };
    assert.equal(first.result.tools.length, 5);
    assert.equal(first.result.resultType, 'complete');
    assert.equal(first.result.ttlMs, 0);
    const second = JSON.parse(
      await d.handleRequest(
        {
          jsonrpc: '2.0',
          id: 2,
          method: 'tools/list',
          params: { cursor: first.result.nextCursor },
        },
        legacy(),
      ),
    ) as { result: { tools: { name: string }[]; resultType?: string } };
    assert.equal(second.result.tools[0]!.name, 't005');
    assert.equal(second.result.resultType, undefined, 'no resultType on 2025 results');
  });

  it('applies the per-principal view hook to lists and calls', async () => {
    const d = createMcpDispatcher(registryWith(6), {
      filterFor: (scope) => (scope.principal === 'evens' ? (owner) => owner === 'even' : undefined),
    });
    const scope: RequestScope = { ...legacy(), principal: 'evens' };
    const list = JSON.parse(
      await d.handleRequest({ jsonrpc: '2.0', id: 1, method: 'tools/list' }, scope),
    ) as {
      result: { tools: { name: string }[] };
    };
    assert.deepEqual(
      list.result.tools.map((t) => t.name),
      ['t000', 't002', 't004'],
    );
    const hidden = JSON.parse(
      await d.handleRequest(
        { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 't001' } },
        scope,
      ),
    ) as { error: { code: number; message: string } };
    assert.equal(hidden.error.code, -32602);
    assert.equal(hidden.error.message, 'Unknown tool: t001');
  });

  it('aborts the CallContext signal on notifications/cancelled', async () => {
    const r = new Registry();
    let seen: AbortSignal | undefined;
    r.addTool('o', {
      name: 'wait',
      description: 'waits for abort',
      inputSchema: { type: 'object' },
      handler: (_a, ctx) =>
        new Promise((resolve) => {
          seen = ctx.signal;
          ctx.signal!.addEventListener('abort', () =>
            resolve({ content: [{ type: 'text', text: 'stopped' }] }),
          );
        }),
    });
    const d = createMcpDispatcher(r);
    const scope = legacy();
    const pending = d.handleRequest(
      { jsonrpc: '2.0', id: 'w', method: 'tools/call', params: { name: 'wait' } },
      scope,
      new RequestChannel(),
    );
    await new Promise((res) => setImmediate(res));
    assert.equal(scope.session!.inflight.size, 1);
    d.handleNotification(
      { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'w' } },
      scope,
    );
    assert.match(await pending, /stopped/);
    assert.equal(seen?.aborted, true);
    assert.equal(scope.session!.inflight.size, 0);
  });

  it("answers a raising prompt handler with -32603 and the handler's message, as the plugin's error", async () => {
    const r = new Registry();
    r.addPrompt('o', {
      name: 'boom',
      description: '',
      arguments: [],
      handler: async () => {
        throw new Error('secret');
      },
    });
    const errors: unknown[] = [];
    const failures: HandlerError[] = [];
    r.onHandlerError((e) => failures.push(e));
    const d = createMcpDispatcher(r, { onError: (e) => errors.push(e) });
    const out = JSON.parse(
      await d.handleRequest(
        { jsonrpc: '2.0', id: 1, method: 'prompts/get', params: { name: 'boom' } },
        legacy(),
      ),
    ) as {
      error: { code: number; message: string };
    };
    assert.equal(out.error.code, -32603);
    assert.equal(out.error.message, 'secret');
    assert.equal(errors.length, 0, "the handler's failure is not the hub's internal error");
    assert.equal(failures.length, 1);
    assert.equal(failures[0]?.owner, 'o');
  });
});

describe('fan-out hook', () => {
  it('asks viewChanged per sink and kind', () => {
    const r = registryWith(1);
    const got: string[] = [];
    const fanout = new ListChangedFanout(r, {
      viewChanged: (sink, kind) => sink.principal !== 'blind' || kind !== 'tools',
    });
    fanout.add({
      kinds: new Set(['tools', 'prompts']),
      principal: 'blind',
      deliver: (k) => got.push(`blind:${k}`),
    });
    fanout.add({
      kinds: new Set(['tools']),
      principal: 'all',
      deliver: (k) => got.push(`all:${k}`),
    });
    // One batch: one change event naming both kinds, delivered at once.
    r.beginBatch();
    r.addTool('x', {
      name: 'new',
      description: '',
      inputSchema: { type: 'object' },
      handler: async () => ({ content: [] }),
    });
    r.addPrompt('x', {
      name: 'p',
      description: '',
      arguments: [],
      handler: async () => ({ messages: [] }),
    });
    r.endBatch();
    assert.deepEqual(got, ['blind:prompts', 'all:tools']);
    fanout.close();
  });
});

describe('request guard', () => {
  it('checks Host and Origin', () => {
    const guard = createRequestGuard({
      allowedHosts: ['hub.internal'],
      allowedOrigins: ['https://app.example.com'],
    });
    assert.equal(guard({ host: 'localhost:3000' }), undefined);
    assert.equal(guard({ host: '[::1]:3000' }), undefined);
    assert.equal(guard({ host: 'hub.internal:80', origin: 'https://app.example.com' }), undefined);
    assert.equal(guard({ host: 'evil.com' })?.status, 403);
    assert.equal(guard({})?.status, 403);
    assert.equal(guard({ host: 'localhost:99999' })?.status, 403);
    assert.equal(guard({ host: 'localhost', origin: 'http://localhost.evil.com' })?.status, 403);
  });
});
