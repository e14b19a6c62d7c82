/**
 * The list_changed fan-out's coalescing (list-changed.ts): the first change after a quiet spell
 * is delivered at once, the changes within the interval after it once at its end, and a change
 * is never left without a delivery at or after it.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Registry } from '../../src/registry/registry.js';
import type { EntryKind } from '../../src/registry/types.js';
import { ListChangedFanout } from '../../src/server/list-changed.js';

const tool = (name: string) => ({
  name,
  description: '',
  inputSchema: { type: 'object' },
  handler: async () => ({ content: [] }),
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function fanoutOf(intervalMs: number) {
  const registry = new Registry();
  const fanout = new ListChangedFanout(registry, {}, intervalMs);
  const got: EntryKind[] = [];
  fanout.add({ kinds: new Set<EntryKind>(['tools', 'prompts']), deliver: (k) => got.push(k) });
  return { registry, fanout, got };
}

describe('list_changed coalescing', () => {
  it('delivers the first change at once and the rest of the interval once, at its end', async () => {
    const { registry, fanout, got } = fanoutOf(50);
    registry.addTool('p', tool('a'));
    assert.deepEqual(got, ['tools'], 'the first change, at once');
    for (let i = 0; i < 1000; i++) {
      registry.addTool('p', tool('tmp'));
      registry.removeTool('tmp');
    }
    registry.addPrompt('p', {
      name: 'q',
      description: '',
      arguments: [],
      handler: async () => ({ messages: [] }),
    });
    assert.deepEqual(got, ['tools'], 'nothing more within the interval');
    await sleep(120);
    assert.deepEqual(got, ['tools', 'tools', 'prompts'], 'one per kind at its end');
    await sleep(120);
    assert.equal(got.length, 3, 'nothing once quiet');
    registry.removeTool('a');
    assert.deepEqual(got.slice(3), ['tools'], 'after a quiet spell, at once again');
    fanout.close();
  });

  it('a closed fan-out delivers nothing pending', async () => {
    const { registry, fanout, got } = fanoutOf(20);
    registry.addTool('p', tool('a'));
    registry.addTool('p', tool('b'));
    fanout.close();
    await sleep(60);
    assert.deepEqual(got, ['tools']);
  });
});
