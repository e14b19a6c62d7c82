/**
 * The audit log against a hostile client: a `tools/call` whose arguments nest 10,000 deep (a
 * 20 KB body) used to kill a hub started with an audit log (JSON.stringify of the arguments threw
 * a RangeError in the observer, the answer's promise rejected, nothing caught it). Now the call
 * is answered, the hub keeps serving, and the audit line is written, marked, in both eras and
 * with `include_arguments` too (its line used to be dropped silently). The hub's door refuses
 * such nesting by default now (limits.json.depth, test/server/json-shape.test.ts); this file
 * raises that bound to test the audit log's own defence.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { makeHubDir, type HubDir } from '../helpers/auth-hub.js';
import { startMoonhub, type MoonhubProcess } from '../helpers/moonhub-process.js';
import { waitFor } from '../helpers/mcp-client.js';
import { initialize, MODERN_META, post } from '../reliability/limits-helpers.js';

const PLUGIN = `mcp.tool("p.echo", { description = "echo" }, function() return "echo" end)`;
const DEEP = '['.repeat(10_000) + ']'.repeat(10_000);
const call = (id: number, meta = '') =>
  `{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":{"name":"p.echo",` +
  `"arguments":{"x":${DEEP}}${meta}}}`;

interface Line {
  method: string;
  name: string | null;
  argument_error?: string;
  arguments?: unknown;
}

for (const includeArguments of [false, true]) {
  describe(`audit log (include_arguments: ${includeArguments}) and arguments nested too deep`, () => {
    let dir: HubDir;
    let hub: MoonhubProcess;
    let audit: string;

    before(async () => {
      dir = makeHubDir({ p: PLUGIN });
      audit = join(dir.root, 'audit.jsonl');
      const file = dir.write(
        'moonhub.json',
        JSON.stringify({
          plugins: { dirs: ['plugins'] },
          observe: { audit: { to: 'audit.jsonl', include_arguments: includeArguments } },
          // The door refuses such nesting by default (limits.json.depth 256): raised here so
          // the audit log's own defence is what is tested.
          limits: { json: { depth: 100_000 } },
        }),
      );
      hub = await startMoonhub(['--config', file, '--data', dir.data, '--no-watch']);
    });
    after(async () => hub?.stop());

    it('answers the call, keeps serving and writes a marked line', async () => {
      const modern = await post(hub.url, call(1, `,"_meta":${JSON.stringify(MODERN_META)}`), {
        'MCP-Protocol-Version': '2026-07-28',
        'Mcp-Method': 'tools/call',
        'Mcp-Name': 'p.echo',
      });
      assert.equal(modern.status, 200, modern.text.slice(0, 200));
      assert.equal(modern.body?.id, 1);
      const sid = (await initialize(hub.url)).sid!;
      const legacy = await post(hub.url, call(2), {
        'Mcp-Session-Id': sid,
        'MCP-Protocol-Version': '2025-11-25',
      });
      assert.equal(legacy.status, 200, legacy.text.slice(0, 200));
      assert.equal(legacy.body?.id, 2);
      assert.ok(hub.alive(), 'the hub is still running');

      const lines = (): Line[] =>
        readFileSync(audit, 'utf8')
          .split('\n')
          .filter((l) => l !== '')
          .map((l) => JSON.parse(l) as Line);
      await waitFor(
        () => lines().filter((l) => l.method === 'tools/call').length >= 2,
        5000,
        'two tools/call audit lines',
      );
      for (const line of lines().filter((l) => l.method === 'tools/call')) {
        assert.equal(line.name, 'p.echo');
        assert.match(line.argument_error ?? '', /nested too deep/);
        assert.equal(line.arguments, undefined);
      }
    });
  });
}
