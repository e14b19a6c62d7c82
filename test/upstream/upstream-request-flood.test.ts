/**
 * An upstream may send the hub requests (ping, sampling, elicitation, roots/list) on its
 * server-to-client stream. A hostile one flooding `ping` made the hub answer each one at once: a
 * POST per ping over HTTP (every fetch another listener on the transport's shared AbortSignal),
 * a line per ping over stdio, without end. The hub now takes at most
 * `plugin_limits.upstream_requests_per_second` of them per upstream (and
 * `plugin_limits.upstream_requests_in_flight` at once); the rest are dropped and counted, and
 * one sending ten times its rate is disconnected (each message still costs the hub's thread its
 * parsing) and reconnected after a delay doubling with each flood. Real hub, real hostile
 * upstreams (HTTP and stdio), a flood lasting while other clients are served.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import type { Client } from '@modelcontextprotocol/client';
import {
  startFloodUpstream,
  STDIO_FLOOD_SCRIPT,
  type FloodUpstream,
} from '../helpers/flood-upstream.js';
import { connectHttpClient } from '../helpers/mcp-client.js';
import { startMoonhub, type MoonhubProcess } from '../helpers/moonhub-process.js';
import { call, rssMiB, scratch, type Scratch } from '../reliability/helpers.js';

/** The plugin's proxy: plugin_limits.upstream_requests_per_second. */
const RATE = 20;
/** The configured (stdio) upstream: the default. */
const DEFAULT_RATE = 50;
const FLOOD_MS = 4000;

let flood: FloodUpstream;
let hub: MoonhubProcess;
let dir: Scratch;
let client: Client;
let started: number;
let answersFile: string;

before(async () => {
  flood = await startFloodUpstream('ping');
  dir = scratch('moonhub-request-flood-');
  const script = dir.write('flood.mjs', STDIO_FLOOD_SCRIPT);
  answersFile = dir.write('answers.txt', '');
  dir.write(
    'plugins/p.lua',
    `mcp.proxy("${flood.url}", { prefix = "up." })
     mcp.tool("echo", {}, function() return "lua ok" end)
    `,
  );
  const config = dir.write(
    'moonhub.yaml',
    `plugins: { dirs: [plugins] }
plugin_limits: { upstream_requests_per_second: ${RATE} }
upstreams:
  sflood: { command: ${JSON.stringify(process.execPath)}, args: [${JSON.stringify(script)}, ${JSON.stringify(answersFile)}] }
`,
  );
  started = performance.now();
  hub = await startMoonhub(['--config', config, '--no-watch']);
  ({ client } = await connectHttpClient(hub.url, 'modern'));
});

after(async () => {
  await client?.close();
  await hub?.stop();
  await flood?.close();
  dir?.remove();
});

/** The stdio upstream's count of answers it read (it notes every thousandth). */
function stdioAnswers(): number {
  const lines = readFileSync(answersFile, 'utf8').trim().split('\n');
  return Number(/answers (\d+)/.exec(lines.at(-1) ?? '')?.[1] ?? 0);
}

describe('an upstream flooding the hub with requests', () => {
  it('the hub starts and serves other clients while the flood lasts', async () => {
    const health = hub.url.replace(/\/mcp$/, '/healthz');
    let longest = 0;
    let calls = 0;
    const until = performance.now() + FLOOD_MS;
    while (performance.now() < until) {
      const t0 = performance.now();
      assert.equal((await fetch(health)).status, 200);
      assert.deepEqual(await call(client, 'echo'), { isError: false, text: 'lua ok' });
      longest = Math.max(longest, performance.now() - t0);
      calls++;
      await new Promise((r) => setTimeout(r, 20));
    }
    assert.ok(flood.sent > 20_000, `the upstream flooded (${flood.sent} pings sent)`);
    assert.ok(longest < 500, `a health check and a Lua call took ${Math.round(longest)} ms`);
    assert.ok(calls > 20, `only ${calls} rounds served`);
    // Past ten times its rate the upstream is dropped, and reconnected later and later.
    const log = hub.log();
    assert.match(log, /more than 10 times 20 requests a second[^\n]*reconnecting in 1000 ms/);
    assert.match(log, /more than 10 times 20 requests a second[^\n]*reconnecting in 2000 ms/);
    assert.match(log, /"upstream":"sflood"[^\n]*more than 10 times 50 requests a second/);
  });

  it('answers at most the configured rate, drops the rest and says so', async () => {
    const seconds = (performance.now() - started) / 1000;
    // The bucket starts full (RATE), then refills at RATE a second.
    const most = RATE + RATE * seconds;
    assert.ok(flood.answers <= most, `${flood.answers} answers in ${seconds.toFixed(1)} s`);
    assert.ok(flood.answers > 0, 'the first pings were answered');
    const stdio = stdioAnswers();
    assert.ok(stdio <= DEFAULT_RATE * (1 + seconds), `stdio: ${stdio} answers`);
    assert.match(hub.log(), /upstream requests dropped[^\n]*upstream_requests_per_second/);
    const rss = rssMiB(hub.child.pid!);
    assert.ok(rss < 400, `the hub holds ${Math.round(rss)} MiB`);
  });
});
