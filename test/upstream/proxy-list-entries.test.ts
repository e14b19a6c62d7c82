/**
 * What an upstream lists is checked entry by entry: one tool whose inputSchema is not an object
 * (or whose name is not a string, or longer than 128 characters) made the SDK refuse the whole
 * page, so nothing of that upstream was imported; now just that entry is skipped, with a warning
 * naming it. The list's pages are followed (`nextCursor`), up to `plugin_limits.registrations`
 * entries and 100 pages, and a cursor seen before ends the walk. A tool with `x-mcp-header`
 * parameters still gets its headers (the SDK's callTool is handed its definition).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Client } from '@modelcontextprotocol/client';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream.js';
import { connectHttpClient } from '../helpers/mcp-client.js';
import { startMoonhub, type MoonhubProcess } from '../helpers/moonhub-process.js';
import { call, scratch, type Scratch } from '../reliability/helpers.js';

const LONG = `t${'x'.repeat(128)}`;
const tool = (name: unknown, inputSchema: unknown = { type: 'object' }) => ({ name, inputSchema });
/** An object schema `levels` properties deep (two JSON levels each). */
function deepSchema(levels: number): Record<string, unknown> {
  let s: Record<string, unknown> = { type: 'string' };
  for (let i = 0; i < levels; i++) s = { type: 'object', properties: { a: s } };
  return s;
}

let fake: FakeUpstream;
let paged: FakeUpstream;
let endless: FakeUpstream;
let looping: FakeUpstream;
let upstream: MoonhubProcess;
let hub: MoonhubProcess;
let dir: Scratch;
let client: Client;

before(async () => {
  fake = await startFakeUpstream();
  fake.extraTools = [
    tool('bad_schema', 'not a schema'),
    tool(42),
    tool(LONG),
    tool('fine', { type: 'object', properties: { a: { type: 'string' } } }),
    // Deeper than MAX_SCHEMA_DEPTH (64 JSON levels); 5,000 levels failed the whole import.
    tool('deep', deepSchema(100)),
  ];
  fake.resources = [
    { uri: 'mem://fine', name: 'fine' },
    { uri: `mem://${'u'.repeat(5000)}`, name: 'long_uri' },
  ];
  paged = await startFakeUpstream();
  paged.listPage = (cursor) => {
    const page = cursor === undefined ? 0 : Number(cursor.slice(1));
    return {
      tools: [tool(`p${page}a`), tool(`p${page}b`)],
      ...(page < 4 && { nextCursor: `c${page + 1}` }),
    };
  };
  // A new cursor every time: the walk stops at the registrations bound (30 entries here).
  endless = await startFakeUpstream();
  endless.listPage = (cursor) => {
    const page = cursor === undefined ? 0 : Number(cursor.slice(1));
    return { tools: [tool(`e${page}`)], nextCursor: `c${page + 1}` };
  };
  // Two cursors taking turns: the first repeated one ends the walk.
  looping = await startFakeUpstream();
  looping.listPage = (cursor) => ({
    tools: [tool(`l${cursor ?? 'start'}`)],
    nextCursor: cursor === 'A' ? 'B' : 'A',
  });
  dir = scratch('moonhub-list-entries-');
  dir.write(
    'up/h.lua',
    `mcp.tool("where", { input_schema = { type = "object",
       properties = { region = { type = "string", ["x-mcp-header"] = "Region" } } } },
       function(p) return "in " .. p.region end)
     mcp.tool("number_header", { input_schema = { type = "object",
       properties = { n = { type = "number", ["x-mcp-header"] = "N" } } } }, function() return "called" end)
     mcp.tool("twice_header", { input_schema = { type = "object", properties = {
       a = { type = "string", ["x-mcp-header"] = "Zone" },
       b = { type = "string", ["x-mcp-header"] = "zone" } } } }, function() return "called" end)`,
  );
  upstream = await startMoonhub(['--plugins', `${dir.dir}/up`, '--no-watch']);
  dir.write(
    'plugins/p.lua',
    `mcp.proxy("${fake.url}", { prefix = "f." })
     mcp.proxy("${paged.url}", { prefix = "p." })
     mcp.proxy("${endless.url}", { prefix = "e." })
     mcp.proxy("${looping.url}", { prefix = "l." })
     mcp.proxy("${upstream.url}", { prefix = "h." })
    `,
  );
  const config = dir.write(
    'moonhub.yaml',
    'plugins: { dirs: [plugins] }\nplugin_limits: { registrations: 30 }\n',
  );
  hub = await startMoonhub(['--config', config, '--no-watch']);
  ({ client } = await connectHttpClient(hub.url, 'modern'));
});

after(async () => {
  await client?.close();
  await hub?.stop();
  await upstream?.stop();
  for (const f of [fake, paged, endless, looping]) await f?.close();
  dir?.remove();
});

async function names(prefix: string): Promise<string[]> {
  const { tools } = await client.listTools();
  return tools.map((t) => t.name).filter((n) => n.startsWith(prefix));
}

describe("an upstream's list, entry by entry and page by page", () => {
  it('skips a resource whose URI is longer than 4096 characters, naming it', async () => {
    const { resources } = await client.listResources();
    const uris = resources.map((r) => r.uri);
    assert.ok(uris.includes('mem://fine'), uris.join());
    assert.ok(!uris.some((u) => u.length > 4096), 'a long URI was imported');
    assert.match(hub.log(), /"entry":"long_uri"[^\n]*uri is longer than 4096 characters \(5006\)/);
  });

  it('skips only the entries that do not fit, naming them', async () => {
    assert.deepEqual((await names('f.')).sort(), ['f.fine', 'f.work']);
    assert.deepEqual(await call(client, 'f.fine', { a: 'x' }), { isError: false, text: 'worked' });
    const log = hub.log();
    assert.match(log, /"entry":"bad_schema"[^\n]*inputSchema is not an object schema/);
    assert.match(log, /"entry":"\(unnamed\)"[^\n]*name is not a non-empty string/);
    assert.match(log, new RegExp(`"entry":"${LONG}"[^\\n]*longer than 128 characters`));
    assert.match(
      log,
      /"entry":"deep"[^\n]*inputSchema or outputSchema nests deeper than 64 levels/,
    );
  });

  it('follows nextCursor to the last page', async () => {
    const all = await names('p.');
    assert.equal(all.length, 10);
    assert.ok(all.includes('p.p4b'));
  });

  it('stops an endless cursor at the registrations bound', async () => {
    assert.equal((await names('e.')).length, 30);
    assert.equal(endless.requests.filter((m) => m === 'tools/list').length, 30);
  });

  it('stops at a cursor seen before', async () => {
    assert.deepEqual((await names('l.')).sort(), ['l.lA', 'l.lB', 'l.lstart']);
  });

  it('leaves out tools whose x-mcp-header declarations are invalid (2026-07-28 over HTTP)', async () => {
    // A client MUST NOT call them (SEP-2243); the SDK client's listTools leaves them out too.
    const listed = await names('h.');
    assert.ok(listed.includes('h.where'), listed.join());
    assert.ok(
      !listed.includes('h.number_header') && !listed.includes('h.twice_header'),
      listed.join(),
    );
    const log = hub.log();
    assert.match(log, /"entry":"number_header"[^\n]*x-mcp-header[^\n]*string, integer or boolean/);
    assert.match(log, /"entry":"twice_header"[^\n]*declared twice/);
  });

  it('still mirrors x-mcp-header parameters into headers', async () => {
    assert.deepEqual(await call(client, 'h.where', { region: 'eu' }), {
      isError: false,
      text: 'in eu',
    });
  });
});
