/**
 * Schema keywords whose cost the client's data sizes, checked on the hub's thread: `uniqueItems`
 * and `enum` (src/registry/unique-items.ts, linear-enum.ts).
 *
 * A tool's `uniqueItems` against a client's array. ajv compared the items of an array that may
 * hold objects pair by pair: 16,000 small objects in one call's arguments held the hub's thread
 * 8.7 s (the client chooses the array, the plugin only declared an ordinary schema). The keyword
 * is now checked in linear time (src/registry/unique-items.ts), with ajv's error.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Client } from '@modelcontextprotocol/client';
import { makeHubDir, type HubDir } from '../helpers/auth-hub.js';
import { connectHttpClient } from '../helpers/mcp-client.js';
import { startMoonhub, type MoonhubProcess } from '../helpers/moonhub-process.js';
import { adminToken, hubLoopDelay } from '../helpers/operations.js';
import { call } from './helpers.js';
import { canonicalJson, repeatedPair } from '../../src/registry/unique-items.js';
import { enumValidator } from '../../src/registry/linear-enum.js';

const PLUGIN = `
local codes = {}
for i = 1, 1000 do codes[i] = "code" .. i end
mcp.tool("u.codes", { input_schema = { type = "object", properties = {
  xs = { type = "array", items = { enum = codes } } } } }, function(args) return "got " .. #args.xs end)
mcp.tool("u.tags", {
  input_schema = { type = "object", properties = {
    items = { type = "array", uniqueItems = true, items = { type = "object" } } } },
}, function(args) return "got " .. #args.items end)
mcp.tool("u.echo", {}, function() return "echo" end)
`;

describe('uniqueItems and enum', () => {
  it('uniqueItems: compares values as JSON does, whatever the key order', () => {
    assert.equal(
      canonicalJson({ b: [1, { d: 2, c: null }], a: 'x' }),
      '{"a":"x","b":[1,{"c":null,"d":2}]}',
    );
    assert.deepEqual(repeatedPair([1, '1', true, null, {}, []]), undefined);
    assert.deepEqual(repeatedPair([{ a: 1, b: 2 }, 3, { b: 2, a: 1 }]), [2, 0]);
    // ajv's pair: the last item repeating an earlier one, and the last such earlier one.
    assert.deepEqual(repeatedPair([1, 2, 1, 2, 1]), [4, 2]);
  });

  it('enum: the same members as ajv, whatever the key order', () => {
    const check = enumValidator(['a', 1, null, true, { k: 1, j: [2] }]);
    for (const v of ['a', 1, null, true, { j: [2], k: 1 }]) assert.equal(check(v), true);
    for (const v of ['b', 0, false, '1', { k: 1 }, [2]]) assert.equal(check(v), false);
    assert.equal(check.errors?.[0]?.message, 'must be equal to one of the allowed values');
  });

  describe('against a real hub', () => {
    let dir: HubDir;
    let hub: MoonhubProcess;
    let client: Client;

    before(async () => {
      dir = makeHubDir({ u: PLUGIN });
      hub = await startMoonhub(['--plugins', dir.plugins, '--data', dir.data, '--no-watch']);
      ({ client } = await connectHttpClient(hub.url, 'modern'));
    });
    after(async () => {
      await client?.close();
      await hub?.stop();
    });

    it("checks 10,000 objects without holding the hub's thread", async (t) => {
      const admin = adminToken(dir.data);
      await hubLoopDelay(hub.url, admin);
      const items = Array.from({ length: 10_000 }, (_, i) => ({ n: i, tag: `t${i % 7}` }));
      const t0 = performance.now();
      const ok = await call(client, 'u.tags', { items });
      const took = performance.now() - t0;
      const dup = await call(client, 'u.tags', { items: [...items, { tag: 't3', n: 10 }] });
      const lag = await hubLoopDelay(hub.url, admin);
      t.diagnostic(`answered in ${took.toFixed(0)} ms; hub event-loop delay worst ${lag.max} ms`);
      assert.deepEqual(ok, { isError: false, text: 'got 10000' });
      assert.deepEqual(dup, {
        isError: true,
        text: "Invalid arguments for tool 'u.tags': argument 'items' must NOT have duplicate items (items ## 10 and 10000 are identical)",
      });
      assert.ok(lag.max < 300, `the hub's thread was held ${lag.max} ms`);
      assert.deepEqual(await call(client, 'u.echo'), { isError: false, text: 'echo' });
    });

    it("checks 90,000 items against an enum of 1,000 without holding the hub's thread", async (t) => {
      // ajv compared each item with every allowed value: 1.6 s of /healthz waiting before.
      const admin = adminToken(dir.data);
      await hubLoopDelay(hub.url, admin);
      const xs = Array.from({ length: 90_000 }, (_, i) => `code${1000 - (i % 3)}`);
      const ok = await call(client, 'u.codes', { xs });
      const bad = await call(client, 'u.codes', { xs: [...xs.slice(0, 10), 'code1001'] });
      const lag = await hubLoopDelay(hub.url, admin);
      t.diagnostic(`hub event-loop delay worst ${lag.max} ms`);
      assert.deepEqual(ok, { isError: false, text: 'got 90000' });
      assert.deepEqual(bad, {
        isError: true,
        text: "Invalid arguments for tool 'u.codes': argument 'xs.10' must be equal to one of the allowed values",
      });
      assert.ok(lag.max < 300, `the hub's thread was held ${lag.max} ms`);
    });
  });
});
