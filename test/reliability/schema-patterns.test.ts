/**
 * A tool's input schema may carry `pattern`, which the hub runs on a client's argument on its
 * own thread before the handler. A plugin author or a hostile upstream choosing `^(a+)+$` froze
 * the hub for seconds on 28 characters (every client waited); patterns now run on V8's
 * linear-time engine. One it cannot run (lookaround, backreferences) is not enforced: the tool
 * stays, and the log says which pattern the hub skips.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Client } from '@modelcontextprotocol/client';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream.js';
import { connectHttpClient } from '../helpers/mcp-client.js';
import { startMoonhub, type MoonhubProcess } from '../helpers/moonhub-process.js';
import { call, longestHealthWait, scratch, type Scratch } from './helpers.js';

const EVIL = { type: 'string', pattern: '^(a+)+$' };
const ATTACK = `${'a'.repeat(28)}!`;

let fake: FakeUpstream;
let hub: MoonhubProcess;
let dir: Scratch;
let client: Client;

before(async () => {
  fake = await startFakeUpstream();
  fake.extraTools = [
    { name: 'evil', inputSchema: { type: 'object', properties: { q: EVIL } } },
    {
      name: 'backref',
      inputSchema: { type: 'object', properties: { q: { type: 'string', pattern: '(a)\\1' } } },
    },
  ];
  dir = scratch('moonhub-patterns-');
  dir.write(
    'plugins/p.lua',
    `mcp.tool("evil", { input_schema = { type = "object", properties = {
       q = { type = "string", pattern = "^(a+)+$" } } } }, function(p) return "ran" end)
     local ok, err = pcall(mcp.tool, "lookbehind", { input_schema = { type = "object",
       properties = { q = { type = "string", pattern = "(?<=x)y" } } } },
       function(p) return "got " .. p.q end)
     mcp.tool("why", {}, function() return tostring(ok) .. " " .. tostring(err) end)
     mcp.tool("lookahead_props", { input_schema = { type = "object",
       properties = { n = { type = "string" } },
       patternProperties = { ["^(?=a)"] = { type = "number" } },
       additionalProperties = false } }, function(p) return "got " .. p.n .. " " .. tostring(p.a1) end)
     mcp.proxy("${fake.url}", { prefix = "up." })
    `,
  );
  const config = dir.write('moonhub.yaml', 'plugins: { dirs: [plugins] }\n');
  hub = await startMoonhub(['--config', config, '--no-watch']);
  await hub.waitForLog(/upstream imported/, 0, 15_000);
  ({ client } = await connectHttpClient(hub.url, 'modern'));
});

after(async () => {
  await client?.close();
  await hub?.stop();
  await fake?.close();
  dir?.remove();
});

describe('input schema patterns', () => {
  for (const tool of ['evil', 'up.evil']) {
    it(`a backtracking pattern (${tool}) is matched in linear time`, async () => {
      const t0 = performance.now();
      const attack = call(client, tool, { q: ATTACK });
      const longest = await longestHealthWait(hub.url, attack, 10);
      const r = await attack;
      const took = performance.now() - t0;
      assert.equal(r.isError, true);
      assert.match(r.text, /must match pattern/);
      assert.ok(took < 1000, `the call took ${Math.round(took)} ms`);
      assert.ok(longest < 500, `the hub's thread stalled ${Math.round(longest)} ms`);
      assert.deepEqual(await call(client, tool, { q: 'aaa' }), {
        isError: false,
        text: tool === 'evil' ? 'ran' : 'worked',
      });
    });
  }

  it('a pattern the linear engine cannot run is not enforced, and the log names it', async () => {
    assert.equal((await call(client, 'why')).text, 'true nil');
    const names = (await client.listTools()).tools.map((t) => t.name);
    assert.ok(
      ['lookbehind', 'up.work', 'up.backref'].every((n) => names.includes(n)),
      names.join(),
    );
    assert.deepEqual(await call(client, 'lookbehind', { q: 'zzz' }), {
      isError: false,
      text: 'got zzz',
    });
    assert.match(hub.log(), /tool 'lookbehind'[^\n]*\/\(\?<=x\)y\/[^\n]*not enforced/);
    // An unenforced patternProperties entry applies to no property (not to all of them), and
    // the properties it would have matched are not refused as extra.
    assert.deepEqual(await call(client, 'lookahead_props', { n: 's', a1: 'x' }), {
      isError: false,
      text: 'got s x',
    });
    assert.match((await call(client, 'lookahead_props', { n: 5 })).text, /must be string/);
    assert.match(hub.log(), /tool 'up\.backref'[^\n]*\/\(a\)\\+1\/[^\n]*not enforced/);
  });
});
