/**
 * The list page cache in-process, over a real registry and dispatcher: a cached page of a
 * 10,000-tool catalogue costs less than a `ping` (measured 0.26 pings; about ten pings when
 * every request rebuilt and serialised the page), a change made inside a registry batch is never
 * answered from an older page, and the cache never holds more than its bound.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Registry } from '../../src/registry/registry.js';
import { createMcpDispatcher, type RequestScope } from '../../src/server/dispatcher.js';
import { ListCache } from '../../src/server/list-cache.js';

function registryWith(n: number, owner = 'many'): Registry {
  const r = new Registry({ hubId: 'unit' });
  for (let i = 0; i < n; i++) {
    r.addTool(owner, {
      name: `t${String(i).padStart(5, '0')}`,
      description: `tool number ${i}`,
      inputSchema: { type: 'object', properties: { text: { type: 'string' } } },
      handler: async () => ({ content: [] }),
    });
  }
  return r;
}

const modern: RequestScope = {
  era: 'modern',
  protocolVersion: '2026-07-28',
  session: undefined,
  clientCapabilities: {},
};

/** Median µs of `fn` over `n` runs (after a warm-up), measured in alternating blocks. */
async function medianUs(fn: () => Promise<unknown>, n: number): Promise<number> {
  for (let i = 0; i < 50; i++) await fn();
  const times: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await fn();
    times.push((performance.now() - t0) * 1000);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)]!;
}

describe('list page cache', () => {
  it('a cached tools/list page of 10,000 tools costs about a ping', async () => {
    const d = createMcpDispatcher(registryWith(10_000));
    let id = 0;
    const list = () =>
      d.handleRequest({ jsonrpc: '2.0', id: ++id, method: 'tools/list', params: {} }, modern);
    const ping = () =>
      d.handleRequest({ jsonrpc: '2.0', id: ++id, method: 'ping', params: {} }, modern);
    const first = JSON.parse(await list()) as { id: number; result: { tools: unknown[] } };
    assert.equal(first.result.tools.length, 100);
    // Alternate the two so load on a shared machine hits both alike; judge the best block.
    let best = Infinity;
    for (let block = 0; block < 3; block++) {
      const l = await medianUs(list, 400);
      const p = await medianUs(ping, 400);
      best = Math.min(best, l / p);
    }
    // Measured 0.26 pings cached, 10.4-11.5 uncached (rebuild, paginate, serialise 100 tools).
    assert.ok(best < 3, `a cached page cost ${best.toFixed(1)} pings`);
    const again = JSON.parse(await list()) as { id: number; result: unknown };
    assert.equal(again.id, id);
    assert.deepEqual(again.result, first.result);
  });

  it('a change inside a registry batch is never answered from the older page', async () => {
    const registry = registryWith(150);
    const d = createMcpDispatcher(registry);
    const names = async () =>
      (
        JSON.parse(
          await d.handleRequest(
            { jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} },
            modern,
          ),
        ) as { result: { tools: { name: string }[] } }
      ).result.tools.map((t) => t.name);
    assert.equal((await names())[0], 't00000');
    registry.beginBatch();
    try {
      registry.removeTool('t00000');
      // The change event comes at the batch's end; the page's version already differs.
      assert.equal((await names())[0], 't00001');
    } finally {
      registry.endBatch();
    }
    assert.equal((await names())[0], 't00001');
  });

  it('holds at most its bound, and starts over past it', () => {
    const registry = registryWith(10);
    const bound = 10_000;
    const cache = new ListCache(registry, bound);
    const page = 'x'.repeat(3000);
    const version = registry.versions.tools;
    for (let i = 0; i < 20; i++) {
      cache.set('tools/list', undefined, 'modern', `cursor-${i}`, version, page);
      assert.ok(cache.size <= bound, `${cache.size} bytes held`);
    }
    assert.equal(cache.get('tools/list', undefined, 'modern', 'cursor-19'), page);
    // Larger than the whole bound: not kept at all.
    cache.set('tools/list', undefined, 'modern', undefined, version, 'y'.repeat(bound + 1));
    assert.equal(cache.get('tools/list', undefined, 'modern', undefined), undefined);
    // Another view, another era, a non-string cursor: never the same page.
    cache.set('tools/list', undefined, 'modern', 'c', version, 'all');
    assert.equal(
      cache.get('tools/list', () => true, 'modern', 'c'),
      undefined,
    );
    assert.equal(cache.get('tools/list', undefined, 'legacy', 'c'), undefined);
    assert.equal(cache.get('tools/list', undefined, 'modern', 7), undefined);
    // A registry change empties it.
    registry.removeTool('t00003');
    assert.equal(cache.size, 0);
    cache.close();
  });
});
