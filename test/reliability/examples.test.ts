/**
 * The bundled examples under hostile input (issue 12, item 8), on a real hub serving
 * examples/plugins: the prompts' `trim` on a 40,000-space argument (15 s of the hub's thread
 * before), and the notes store filling up with a clear error instead of the memory limit.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Client } from '@modelcontextprotocol/client';
import { connectHttpClient } from '../helpers/mcp-client.js';
import { ROOT, startMoonhub, type MoonhubProcess } from '../helpers/moonhub-process.js';
import { call, honestClient } from './helpers.js';

let hub: MoonhubProcess;
let client: Client;

before(async () => {
  hub = await startMoonhub(['--plugins', join(ROOT, 'examples', 'plugins'), '--no-watch']);
  client = (await connectHttpClient(hub.url, 'modern')).client;
});

after(async () => {
  await client.close();
  await hub.stop();
});

describe('examples/plugins/prompts.lua', () => {
  it('trims a 40,000-space argument in linear time while others are served', async () => {
    const honest = await honestClient(hub.url, 'clock_now');
    // A run of spaces with text after it: `%s+$` retried at every space backtracks each time.
    const hostile = `  a${' '.repeat(40_000)}b  `;
    const t0 = performance.now();
    const r = await client.getPrompt({
      name: 'code-review',
      arguments: { language: hostile, focus: `x${' '.repeat(40_000)}y ` },
    });
    const ms = performance.now() - t0;
    const h = await honest.stop();
    const first = r.messages[0]?.content as { text: string };
    assert.match(first.text, /^You are a careful senior a {40000}b reviewer\./);
    assert.match(first.text, /Pay particular attention to x {40000}y\./);
    assert.ok(ms < 2000, `the prompt took ${ms} ms (15 s before)`);
    assert.equal(h.errors, 0);
    assert.ok(h.max < 2000, `the honest client waited up to ${h.max} ms`);
  });

  it('still trims ordinary arguments', async () => {
    const r = await client.getPrompt({
      name: 'code-review',
      arguments: { language: '  Lua \n', focus: '\tnaming ' },
    });
    const text = (r.messages[0]?.content as { text: string }).text;
    assert.match(text, /senior Lua reviewer/);
    assert.match(text, /attention to naming\./);
    const blank = await client.getPrompt({ name: 'code-review', arguments: { language: '   ' } });
    assert.match((blank.messages[0]?.content as { text: string }).text, /senior {2}reviewer/);
  });
});

describe('examples/plugins/notes', () => {
  it('refuses notes past the store bound with a clear error, and keeps serving', async () => {
    const body = 'b'.repeat(100_000);
    let refused: string | undefined;
    for (let i = 0; i < 60 && refused === undefined; i++) {
      const r = await call(client, 'notes_add', { title: `n${i}`, body });
      if (r.isError) refused = r.text;
    }
    assert.match(refused ?? '', /the store is full: at most 4194304 bytes of text in all/);
    const list = await call(client, 'notes_list', { query: 'b'.repeat(200) });
    assert.equal(list.isError, false);
    const tooLong = await call(client, 'notes_list', { query: 'b'.repeat(201) });
    assert.equal(tooLong.isError, true, 'the query is bounded by the schema');
  });
});
