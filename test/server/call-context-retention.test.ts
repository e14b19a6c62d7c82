/**
 * A call's context must not keep its request alive once the call is over: not through getter
 * closures of its own (every context's lazy fields share their getters, lazy-fields.ts), and
 * not through the isolated plugin's record of finished calls (it keeps who called and the view,
 * never the context). Before, every call's request outlived it long enough to be promoted to the
 * old generation, which cost the hub's thread ~15 % in scavenges (docs/performance.md,
 * "Session 9").
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { silentLogger } from '../../src/log.js';
import { PluginHost } from '../../src/plugins/plugin-host.js';
import { endedContext } from '../../src/plugins/hub-answers.js';
import { withView } from '../../src/registry/entry-views.js';
import { Registry } from '../../src/registry/registry.js';
import type { CallContext } from '../../src/registry/types.js';
import { RequestChannel } from '../../src/server/channel.js';
import { createMcpDispatcher, type RequestScope } from '../../src/server/dispatcher.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

const modern: RequestScope = {
  era: 'modern',
  protocolVersion: '2026-07-28',
  session: undefined,
  clientCapabilities: { elicitation: {} },
};

function call(id: number, params: Record<string, unknown>) {
  return { jsonrpc: '2.0' as const, id, method: 'tools/call', params };
}

/** Lets finalizers and WeakRefs settle: a full collection between turns, a few times. */
async function collected(ref: WeakRef<object>): Promise<boolean> {
  for (let i = 0; i < 10 && ref.deref() !== undefined; i++) {
    await new Promise((r) => setImmediate(r));
    gc();
  }
  return ref.deref() === undefined;
}

describe('call contexts', () => {
  it('share their lazy getters, and spreads and views still carry signal and peer', async () => {
    const registry = new Registry({ hubId: 'unit' });
    const seen: CallContext[] = [];
    registry.addTool('p', {
      name: 'grab',
      description: 'keeps its context',
      inputSchema: { type: 'object' },
      handler: async (_args, ctx) => {
        seen.push(ctx);
        return { content: [{ type: 'text', text: 'ok' }] };
      },
    });
    const d = createMcpDispatcher(registry);
    for (const id of [1, 2])
      await d.handleRequest(call(id, { name: 'grab' }), modern, new RequestChannel());
    const [a, b] = seen as [CallContext, CallContext];
    for (const field of ['signal', 'peer'] as const) {
      const da = Object.getOwnPropertyDescriptor(a, field);
      const db = Object.getOwnPropertyDescriptor(b, field);
      assert.equal(typeof da?.get, 'function', `${field} is an own getter`);
      assert.equal(da?.enumerable, true, `${field} is enumerable`);
      // One function for every context: contexts keep one fast shape and no closure per call.
      assert.equal(da?.get, db?.get, `${field}'s getter is shared`);
    }
    assert.equal(a.request_id, 1);
    assert.equal(b.request_id, 2);
    // A spread copies the values (what the Lua bridge and nested calls do).
    const copy = { ...a };
    assert.ok(copy.signal instanceof AbortSignal);
    assert.equal(copy.peer, a.peer, 'the peer is made once per call');
    assert.deepEqual(copy.peer?.clientCapabilities, { elicitation: {} });
    // A view's copy keeps reading the same call's fields.
    const viewed = withView(b, () => true);
    assert.equal(viewed.peer, b.peer);
    assert.equal(viewed.signal, b.signal);
    assert.notEqual(a.signal, b.signal);
  });
});

describe("an isolated plugin's finished calls", () => {
  it('keep who called and the view, not the call (its request can be collected)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'moonhub-retention-'));
    writeFileSync(
      join(dir, 'echo.lua'),
      'mcp.tool("echo", { input_schema = { type = "object" } }, function(p) return p.text end)\n',
    );
    const registry = new Registry({ hubId: 'unit' });
    const host = new PluginHost({
      registry,
      dirs: [dir],
      logger: silentLogger,
      watch: false,
      isolation: 'worker',
    });
    try {
      await host.start();
      const d = createMcpDispatcher(registry);
      let ref: WeakRef<object> | undefined;
      // In a function of its own, so no local of this frame holds the request.
      const run = async (): Promise<string> => {
        const params = {
          name: 'echo',
          arguments: { text: 'hello' },
          ballast: { big: 'x'.repeat(1e5) },
        };
        ref = new WeakRef(params);
        return d.handleRequest(call(7, params), modern, new RequestChannel());
      };
      const out = await run();
      assert.match(out, /hello/);
      // The worker has answered and the call is among the finished ones (kept for 1,024 more
      // calls); its request must go at the next collection all the same.
      assert.ok(await collected(ref!), 'the finished call still holds its request');
    } finally {
      await host.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('act for the caller with a client that says the call has ended', async () => {
    const filter = (owner: string) => owner === 'p';
    const live: CallContext = {
      hub_id: 'h',
      session_uuid: 's',
      agent_name: 'a',
      target: 't',
      principal: 'u',
      request_id: 3,
      filter,
      get peer(): CallContext['peer'] {
        throw new Error('a finished call must not make its peer');
      },
    };
    const ended = endedContext(live);
    assert.deepEqual(
      { ...ended, peer: undefined, filter: undefined },
      {
        hub_id: 'h',
        session_uuid: 's',
        agent_name: 'a',
        target: 't',
        principal: 'u',
        request_id: 3,
        peer: undefined,
        filter: undefined,
      },
    );
    assert.equal(ended.filter, filter);
    assert.equal(Object.getOwnPropertySymbols(ended).length, 0, 'no hidden state kept');
    assert.equal(ended.peer?.progress(1), false);
    await assert.rejects(ended.peer!.request('elicitation/create', {}), /has ended/);
    assert.equal(endedContext({ hub_id: 'h' }).peer, undefined, 'no peer when the call had none');
  });
});
