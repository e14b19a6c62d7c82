/**
 * The pure parts of Botster compatibility: `reset("@path")` naming, the bounds on context fields
 * a Lua caller passes on, and Botster's resource and prompt result rules.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  MAX_FIELDS,
  MAX_FIELD_BYTES,
  contextFields,
  ownerFromSource,
} from '../../src/lua-api/botster-compat.js';
import { toPromptResult, toResourceContents } from '../../src/registry/results.js';
import { botsterMeta } from '../../src/upstream/botster-meta.js';

describe('Botster compatibility helpers', () => {
  it('maps Botster source names to plugin names', () => {
    assert.equal(ownerFromSource('@/srv/plugins/notes/init.lua'), 'notes');
    assert.equal(ownerFromSource('@/srv/plugins/clock.lua'), 'clock');
    assert.equal(ownerFromSource('@C:\\plugins\\inbox\\init.lua'), 'inbox');
    assert.equal(ownerFromSource('notes'), 'notes');
  });

  it('passes plain context fields on, never identity, within bounds', () => {
    const given: Record<string, unknown> = {
      session_uuid: 'forged',
      agent_name: 'root',
      principal: 'session:x',
      workspace_id: 'ws-1',
      flag: true,
      n: 3,
      nested: { a: 1 },
      huge: 'x'.repeat(MAX_FIELD_BYTES + 1),
    };
    assert.deepEqual(contextFields(given), { workspace_id: 'ws-1', flag: true, n: 3 });
    const many: Record<string, unknown> = {};
    for (let i = 0; i < MAX_FIELDS + 10; i++) many[`f${i}`] = i;
    assert.equal(Object.keys(contextFields(many) ?? {}).length, MAX_FIELDS);
    assert.equal(contextFields({ session_uuid: 'x' }), undefined);
  });

  it('builds _meta.botster from non-empty strings only, identity from the hub', () => {
    assert.deepEqual(
      botsterMeta({
        hub_id: 'h',
        session_uuid: 's-1',
        fields: { workspace_id: 'ws', repo: '', branch_name: 7 as unknown as string },
      }),
      { session_uuid: 's-1', workspace_id: 'ws' },
    );
    assert.equal(botsterMeta({ hub_id: 'h' }), undefined);
  });

  it('sends a table as JSON and a number as text, with application/json by default', () => {
    assert.deepEqual(toResourceContents({ a: 1 }, 'x://1'), [
      { uri: 'x://1', text: '{"a":1}', mimeType: 'application/json' },
    ]);
    assert.deepEqual(toResourceContents([{ id: 1 }, { id: 2 }], 'x://l', 'text/plain'), [
      { uri: 'x://l', text: '[{"id":1},{"id":2}]', mimeType: 'text/plain' },
    ]);
    assert.deepEqual(toResourceContents(42, 'x://n'), [
      { uri: 'x://n', text: '42', mimeType: 'application/json' },
    ]);
    // Content items are still items.
    assert.deepEqual(
      toResourceContents([{ uri: 'x://a', mimeType: 'text/plain', text: 'hi' }], 'x://a'),
      [{ uri: 'x://a', text: 'hi', mimeType: 'text/plain' }],
    );
    assert.throws(() => toResourceContents(undefined, 'x://u'), /neither a string nor a table/);
  });

  it("gives a string prompt the prompt's description", () => {
    assert.equal(toPromptResult('hi', 'p', 'Hub state').description, 'Hub state');
    assert.equal(toPromptResult('hi', 'p', '').description, undefined);
  });
});
