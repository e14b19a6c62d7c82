/**
 * Registry.callTool hands the caller's view to the handler as ctx.filter (so calls made on the
 * caller's behalf are authorized the same way), keeping the context's own getters as getters.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Registry } from '../../src/registry/registry.js';
import type { CallContext } from '../../src/registry/types.js';

describe('the view in a handler context', () => {
  it('is the filter callTool was given, with the lazy signal getter intact', async () => {
    const registry = new Registry();
    let seen: CallContext | undefined;
    registry.addTool('a', {
      name: 'peek',
      description: '',
      inputSchema: { type: 'object' },
      handler: async (_args, ctx) => {
        seen = ctx;
        return { content: [] };
      },
    });
    let made = 0;
    const ctl = new AbortController();
    const ctx: CallContext = {
      hub_id: 'h',
      get signal() {
        made++;
        return ctl.signal;
      },
    };
    const view = (owner: string) => owner === 'a';
    await registry.callTool('peek', {}, ctx, view);
    assert.equal(seen!.filter, view);
    assert.equal(made, 0, 'the signal was not made just to copy the context');
    ctl.abort();
    assert.equal(seen!.signal!.aborted, true);
    assert.equal(made, 1);

    // A context that already carries a view keeps it; no filter leaves the context as it was.
    const own = { hub_id: 'h', filter: () => true };
    await registry.callTool('peek', {}, own, view);
    assert.equal(seen, own);
    await registry.callTool('peek', {}, ctx);
    assert.equal(seen, ctx);
  });
});
