/**
 * `search_tools` looks for each word of a client's query in every visible tool, on the hub's
 * thread. A query of 100,000 words over 1,000 tools held the hub 8 s, a megabyte of one-letter
 * words 22 s. A query is now bounded in characters and in different words
 * (`execute.search_query_chars`, `execute.search_query_words`): past either it is refused at
 * once with an error naming the key, counted, and nobody else waits.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Client } from '@modelcontextprotocol/client';
import { makeHubDir, type HubDir } from '../helpers/auth-hub.js';
import { connectHttpClient } from '../helpers/mcp-client.js';
import { startMoonhub, type MoonhubProcess } from '../helpers/moonhub-process.js';
import { adminToken, baseOf, hubLoopDelay, sample, scrape } from '../helpers/operations.js';
import { call } from './helpers.js';
import { resolveExecuteOptions } from '../../src/execute/options.js';

const TOOLS = 1000;
const CATALOGUE = `
for k = 1, ${TOOLS} do
  mcp.tool("forecast_" .. k, {
    description = "Weather forecast for city " .. k .. ": temperatures, humidity and wind for seven days.",
    input_schema = { type = "object", properties = { city = { type = "string" } } },
  }, function() return "sunny" end)
end
mcp.tool("other.echo", {}, function() return "echo" end)
`;

interface Found {
  tools: { name: string }[];
  total: number;
}

describe('search_tools query bounds', () => {
  let dir: HubDir;
  let hub: MoonhubProcess;
  let client: Client;
  let admin: string;

  before(async () => {
    dir = makeHubDir({ c: CATALOGUE });
    const config = dir.write(
      'moonhub.yaml',
      'execute: { enabled: false, search_query_chars: 2000, search_query_words: 6 }\n',
    );
    hub = await startMoonhub([
      '--config',
      config,
      '--plugins',
      dir.plugins,
      '--data',
      dir.data,
      '--no-watch',
    ]);
    ({ client } = await connectHttpClient(hub.url, 'modern'));
    admin = adminToken(dir.data);
  });
  after(async () => {
    await client?.close();
    await hub?.stop();
  });

  it('has documented defaults', () => {
    const o = resolveExecuteOptions({});
    assert.equal(o.searchQueryChars, 1000);
    assert.equal(o.searchQueryWords, 16);
  });

  it('refuses a huge query at once, naming the key; the hub keeps serving', async (t) => {
    await hubLoopDelay(hub.url, admin);
    const t0 = performance.now();
    const huge = await call(client, 'search_tools', { query: 'a '.repeat(500_000) });
    const took = performance.now() - t0;
    assert.deepEqual(huge, {
      isError: true,
      text: 'query has 1000000 characters, more than 2000 (execute.search_query_chars)',
    });
    const many = Array.from({ length: 7 }, (_, i) => `w${i}`).join(' ');
    assert.deepEqual(await call(client, 'search_tools', { query: many }), {
      isError: true,
      text: 'query has 7 different words, more than 6 (execute.search_query_words)',
    });
    assert.deepEqual(await call(client, 'other.echo'), { isError: false, text: 'echo' });
    const lag = await hubLoopDelay(hub.url, admin);
    t.diagnostic(`refused in ${took.toFixed(0)} ms; hub event-loop delay worst ${lag.max} ms`);
    assert.ok(lag.max < 300, `the hub's thread was held ${lag.max} ms`);

    const metrics = await scrape(baseOf(hub.url), admin);
    const refusals = (limit: string) => sample(metrics, 'moonhub_limit_refusals_total', { limit });
    assert.equal(refusals('search_query_chars'), 1);
    assert.equal(refusals('search_query_words'), 1);
  });

  it('still finds tools: repeated words count once, and up to the bound is served', async () => {
    const repeated = await call(client, 'search_tools', {
      query: `${'wind '.repeat(300)} city 17`,
      limit: 3,
    });
    assert.equal(repeated.isError, false, repeated.text);
    const found = JSON.parse(repeated.text) as Found;
    assert.equal(found.total, TOOLS);
    assert.equal(found.tools[0]!.name, 'forecast_17');

    const six = await call(client, 'search_tools', {
      query: 'forecast 250 humidity nowhere nothing none',
      limit: 2,
    });
    const best = JSON.parse(six.text) as Found;
    assert.equal(best.tools[0]!.name, 'forecast_250');

    const listed = await client.listTools();
    const search = listed.tools.find((tool) => tool.name === 'search_tools')!;
    const query = (search.inputSchema.properties as Record<string, { description: string }>).query!;
    assert.match(query.description, /at most 2000 characters and 6 different words/);
    assert.ok(hub.alive());
  });
});
