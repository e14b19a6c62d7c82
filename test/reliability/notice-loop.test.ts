/**
 * An `execute` script calling notice() in a tight loop that never yields (the soak's nonreader
 * class): its notices are cut and rate-limited inside the worker, before they cross to the hub's
 * thread. Without that the worker queued messages faster than the hub read them and the hub grew
 * by GiBs in seconds. The run ends at its time limit, the client is told how many were dropped,
 * and the hub's memory and other clients stay fine.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Client } from '@modelcontextprotocol/client';
import { connectHttpClient } from '../helpers/mcp-client.js';
import { startMoonhub, type MoonhubProcess } from '../helpers/moonhub-process.js';
import { adminToken, baseOf, hubLoopDelay, sample, scrape } from '../helpers/operations.js';
import { honestClient, rssMiB, scratch, text, type Scratch } from './helpers.js';

const LOOP = 'local s = string.rep("n", 16000)\nfor i = 1, 1e9 do notice(s) end';
const CONFIG = `
plugins: { dirs: [plugins] }
execute: { timeout_ms: 4000 }
`;
/** Growth allowed while the loop runs; unbounded it passed 2 GiB within the 4 s. */
const GROWTH_BOUND_MIB = 200;

let dir: Scratch;
let hub: MoonhubProcess;
let client: Client;
let admin: string;

before(async () => {
  dir = scratch();
  dir.write('plugins/ok.lua', 'mcp.tool("ok", {}, function() return "ok" end)');
  admin = adminToken(`${dir.dir}/data`);
  hub = await startMoonhub([
    '--config',
    dir.write('moonhub.yaml', CONFIG),
    '--data',
    `${dir.dir}/data`,
    '--no-watch',
  ]);
  client = (await connectHttpClient(hub.url, 'legacy')).client;
});

after(async () => {
  await client.close();
  await hub.stop();
  dir.remove();
});

describe('an execute script calling notice() in a loop that never yields', () => {
  it('is rate-limited in its worker: bounded memory, the drops counted, others served', async (t) => {
    await hubLoopDelay(hub.url, admin); // resets the hub's delay histogram
    const honest = await honestClient(hub.url, 'ok');
    const pid = hub.child.pid!;
    const rssBefore = rssMiB(pid);
    let maxRss = rssBefore;
    const sampler = setInterval(() => (maxRss = Math.max(maxRss, rssMiB(pid))), 50);
    const notices: string[] = [];
    let result: Awaited<ReturnType<Client['callTool']>>;
    try {
      result = await client.callTool(
        { name: 'execute', arguments: { code: LOOP } },
        {
          timeout: 30_000,
          onprogress: (p: { message?: string }) => notices.push(String(p.message ?? '')),
        },
      );
    } finally {
      clearInterval(sampler);
    }
    const h = await honest.stop();
    const lag = await hubLoopDelay(hub.url, admin);
    const dropped = notices.filter((n) => /notices dropped: at most \d+ per second/.test(n));
    t.diagnostic(
      `RSS ${rssBefore.toFixed(0)} -> max ${maxRss.toFixed(0)} MiB; ${notices.length} notices, ` +
        `${dropped.length} drop reports; honest p99 ${h.p99.toFixed(1)} ms; ` +
        `hub event-loop delay p99 ${lag.p99.toFixed(0)} ms, worst ${lag.max.toFixed(0)} ms`,
    );
    assert.equal(result.isError, true);
    assert.match(text(result), /time|limit/i);
    assert.ok(maxRss - rssBefore < GROWTH_BOUND_MIB, `RSS grew ${maxRss - rssBefore} MiB`);
    assert.ok(notices.length > 0, 'some notices reached the client');
    assert.ok(dropped.length > 0, 'the client is told notices were dropped');
    // And the operator sees them: counted under their limit when the run ends.
    const counted = sample(await scrape(baseOf(hub.url), admin), 'moonhub_limit_refusals_total', {
      limit: 'execute_messages_per_second',
    });
    const told = dropped.reduce(
      (n, d) => n + Number(/^(\d+) notices? dropped/.exec(d)?.[1] ?? 0),
      0,
    );
    t.diagnostic(`${counted} dropped notices counted, ${told} told to the caller`);
    assert.ok(counted >= told && counted > 0, `${counted} counted, ${told} told`);
    assert.equal(h.errors, 0, h.messages.join('; '));
    // The script runs in its worker: the hub's own thread stays responsive (its event-loop delay),
    // and the honest client is never frozen out (a bound with room for a loaded machine, whose
    // scheduling the client's process pays too; before the rate limit the hub froze for good).
    assert.ok(lag.p99 < 400 && lag.max < 1000, `hub event-loop delay ${JSON.stringify(lag)} ms`);
    assert.ok(h.count > 0 && h.p99 < 2500, `honest: ${h.count} calls, p99 ${h.p99} ms`);
    assert.ok(hub.alive());
  });
});
