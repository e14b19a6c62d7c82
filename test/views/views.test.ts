/**
 * Views: the scope rules of LUA_API §2.1 (ceiling, narrowing, intersection, empty lists,
 * unknown names, built-ins), and the per-principal view cache over a real registry and real
 * manifest files: who sees a change, and who does not.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { Registry } from '../../src/registry/registry.js';
import type { EntryKind } from '../../src/registry/types.js';
import { silentLogger } from '../../src/log.js';
import { filterOf, resolveScope, type Manifest } from '../../src/views/scope.js';
import { ScopeSource } from '../../src/views/source.js';
import { Views } from '../../src/views/views.js';

const OWNERS = ['a', 'b', 'c', 'builtin:execute', 'builtin:hub_status'];

function visible(
  config: Parameters<typeof resolveScope>[0],
  subject: { agent?: string; target?: string },
  manifests: Record<string, Manifest> = {},
): string[] {
  const filter = filterOf(resolveScope(config, subject, (agent) => manifests[agent]));
  return OWNERS.filter((o) => filter === undefined || filter(o));
}

describe('scope rules', () => {
  const config = {
    targets: { lab: { plugins: ['a', 'b'] }, bare: {}, closed: { plugins: [], builtins: [] } },
    agents: {
      narrow: { plugins: ['b', 'c'] },
      free: {},
      listed: { manifest: '/m.json' },
      tools: { builtins: ['hub_status'] },
      both: { plugins: ['a', 'b'], manifest: '/both.json' },
    },
  };
  const manifests = { listed: { plugins: ['c'] }, both: { plugins: ['b', 'c'] } };

  it('target ceiling, agent narrowing, intersection, none', () => {
    assert.deepEqual(visible(config, { agent: 'narrow', target: 'lab' }), [
      'b',
      'builtin:execute',
      'builtin:hub_status',
    ]);
    assert.deepEqual(visible(config, { agent: 'narrow' }), [
      'b',
      'c',
      'builtin:execute',
      'builtin:hub_status',
    ]);
    assert.deepEqual(visible(config, { agent: 'free', target: 'lab' }), [
      'a',
      'b',
      'builtin:execute',
      'builtin:hub_status',
    ]);
    assert.deepEqual(visible(config, { agent: 'free', target: 'bare' }), OWNERS);
    assert.deepEqual(visible(config, { agent: 'listed' }, manifests), [
      'c',
      'builtin:execute',
      'builtin:hub_status',
    ]);
    assert.deepEqual(visible(config, { agent: 'both' }, manifests), [
      'b',
      'builtin:execute',
      'builtin:hub_status',
    ]);
  });

  it('empty lists allow nothing; built-ins follow their own lists', () => {
    assert.deepEqual(visible(config, { agent: 'free', target: 'closed' }), []);
    assert.deepEqual(visible(config, { agent: 'tools' }), ['a', 'b', 'c', 'builtin:hub_status']);
    assert.deepEqual(visible(config, { agent: 'tools', target: 'lab' }), [
      'a',
      'b',
      'builtin:hub_status',
    ]);
  });

  it('names the config does not define see nothing; without definitions, everything', () => {
    assert.deepEqual(visible(config, { agent: 'typo' }), []);
    assert.deepEqual(visible(config, { agent: 'free', target: 'typo' }), []);
    assert.deepEqual(
      visible(config, { agent: 'listed' }, {}),
      [],
      'an unreadable manifest hides all',
    );
    assert.deepEqual(visible({}, { agent: 'anyone', target: 'anything' }), OWNERS);
    assert.deepEqual(visible(config, {}), OWNERS);
  });
});

describe('views over a registry', () => {
  const tool = (name: string) => ({
    name,
    description: '',
    inputSchema: { type: 'object' },
    handler: async () => ({ content: [] }),
  });

  async function setup() {
    const dir = mkdtempSync(join(tmpdir(), 'moonhub-views-'));
    const manifest = join(dir, 'm.json');
    writeFileSync(manifest, JSON.stringify({ plugins: ['a'] }));
    const registry = new Registry();
    registry.addTool('a', tool('a.x'));
    registry.addTool('b', tool('b.x'));
    registry.addTool('builtin:execute', tool('execute'));
    const source = await ScopeSource.open({
      config: { agents: { P: { manifest }, Q: { plugins: ['b'], builtins: [] } } },
      logger: silentLogger,
      debounceMs: 10,
    });
    const subjects: Record<string, { agent: string }> = {
      'p:1': { agent: 'P' },
      'q:1': { agent: 'Q' },
    };
    const views = new Views({ registry, source, subjectOf: (p) => subjects[p] });
    return { registry, source, views, manifest };
  }

  it('filters per principal; unknown principals see nothing, no principal sees all', async () => {
    const { registry, source, views } = await setup();
    const names = (p: string | undefined) =>
      registry.listTools(views.filterFor(p)).map((t) => t.name);
    assert.deepEqual(names('p:1'), ['a.x', 'execute']);
    assert.deepEqual(names('q:1'), ['b.x']);
    assert.deepEqual(names('gone:1'), []);
    assert.deepEqual(names(undefined), ['a.x', 'b.x', 'execute']);
    await source.close();
  });

  it('reports a registry change only to principals whose view it touches', async () => {
    const { registry, source, views } = await setup();
    views.filterFor('p:1');
    views.filterFor('q:1');
    registry.addTool('b', tool('b.y'));
    assert.equal(views.viewChanged('q:1', 'tools'), true);
    assert.equal(
      views.viewChanged('q:1', 'tools'),
      true,
      'same answer for every sink of one change',
    );
    assert.equal(views.viewChanged('p:1', 'tools'), false);
    registry.addTool('builtin:execute', tool('execute'));
    assert.equal(views.viewChanged('q:1', 'tools'), false, 'Q sees no built-ins');
    assert.equal(views.viewChanged('p:1', 'tools'), true, 're-registered: a new definition');
    assert.equal(views.viewChanged('p:1', 'prompts'), false);
    await source.close();
  });

  it('after coalesced changes, reports a change between two looks whose lists match', async (t) => {
    const { registry, source, views } = await setup();
    // Closed whatever the outcome: an open watcher would keep the test process alive.
    t.after(() => source.close());
    views.filterFor('p:1');
    views.filterFor('q:1');
    // The fan-out looks once for several changes: Q may have listed b.tmp between them.
    registry.addTool('b', tool('b.tmp'));
    registry.removeTool('b.tmp');
    assert.equal(views.viewChanged('q:1', 'tools'), true, 'Q saw b.tmp come and go');
    assert.equal(views.viewChanged('p:1', 'tools'), false, 'P sees nothing of b');
    // A batch is one event, but each change in it moves the version: the same holds.
    registry.beginBatch();
    registry.addPrompt('b', {
      name: 'pr',
      description: '',
      arguments: [],
      handler: async () => ({ messages: [] }),
    });
    registry.removePrompt('pr');
    registry.endBatch();
    assert.equal(views.viewChanged('q:1', 'prompts'), true, 'several changes of b');
    assert.equal(views.viewChanged('p:1', 'prompts'), false);
  });

  it('recomputes on a manifest edit and tells the fan-outs', async () => {
    const { registry, source, views, manifest } = await setup();
    views.filterFor('p:1');
    views.filterFor('q:1');
    const events: ReadonlySet<EntryKind>[] = [];
    views.onViewChange((kinds) => events.push(kinds));
    writeFileSync(manifest, JSON.stringify({ plugins: ['a', 'b'], builtins: [] }));
    const start = Date.now();
    while (events.length === 0 && Date.now() - start < 5000)
      await new Promise((r) => setTimeout(r, 20));
    assert.equal(events.length, 1);
    assert.equal(views.viewChanged('p:1', 'tools'), true);
    assert.equal(views.viewChanged('q:1', 'tools'), false);
    assert.deepEqual(
      registry.listTools(views.filterFor('p:1')).map((t) => t.name),
      ['a.x', 'b.x'],
    );
    await source.close();
  });
});
