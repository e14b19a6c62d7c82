/**
 * Forged answer ids under `--workers 2` (issue 12): a 2025 client may POST a JSON-RPC answer to a
 * server request. Its id used to be trusted by shape (`moonhub-<instance>-<n>`): an answer naming
 * the other worker was published on the bus, relayed by the primary and handed to that worker,
 * whatever its size and whether anything waited for it. Eight seconds of 3.5 MiB answers with
 * forged ids grew the hub by 516 MiB (109 MiB for ids nobody forwards), and honest calls waited
 * a median 231 ms (104 ms). Now ids carry an HMAC tag under the cluster's answer key, checked
 * where the answer lands: a forgery costs what a local unknown answer costs, and the primary
 * relays nothing.
 */
import assert from 'node:assert/strict';
import { Agent, request } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { startMoonhub, type MoonhubProcess } from '../helpers/moonhub-process.js';
import { PROBE_PLUGIN } from '../helpers/cluster-fixture.js';
import { initializeSession } from '../helpers/legacy-raw.js';
import { cpuMs, honestClient, rssMiB, scratch, type Scratch } from './helpers.js';
import { readFileSync } from 'node:fs';

const CONFIG = `
plugins: { dirs: [plugins] }
cluster: { workers: 2 }
`;

const FLOOD_MS = 4000;
/** Connections posting answers at once; each stays with one worker (keep-alive). */
const WIDTH = 3;
/** Characters of each forged answer's padding (as the report: 3.5 MiB). */
const PAD = 3.5 * 1024 * 1024;
/** The primary relays nothing else here; each forwarded 3.5 MiB answer cost it ~10 ms. */
const PRIMARY_CPU_BOUND_MS = 150;
/** A local unknown answer of this size costs ~100 MiB transient growth (the bodies, parsed). */
const GROWTH_BOUND_MIB = 200;

let dir: Scratch;
let hub: MoonhubProcess;

before(async () => {
  dir = scratch();
  dir.write('plugins/probe.lua', PROBE_PLUGIN);
  hub = await startMoonhub(['--config', dir.write('moonhub.yaml', CONFIG), '--no-watch']);
  for (let i = 0; instancesOf(hub.log()).length < 2; i++) {
    assert.ok(i < 300, `two workers not ready:\n${hub.log()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
});

after(async () => {
  await hub?.stop();
  dir?.remove();
});

function instancesOf(log: string): string[] {
  return [...log.matchAll(/worker \d+ \(pid \d+, instance ([0-9a-f]+)\)/g)].map((m) => m[1]!);
}

function clusterRss(pid: number): number {
  const children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/);
  let total = rssMiB(pid);
  for (const c of children) if (c !== '') total += rssMiB(Number(c));
  return total;
}

/** POSTs one answer on `agent`'s connection; resolves with the worker that took it. */
function postAnswer(agent: Agent, sessionId: string, body: string): Promise<[number, string]> {
  return new Promise((resolve, reject) => {
    const req = request(
      hub.url,
      {
        method: 'POST',
        agent,
        headers: {
          'Content-Type': 'application/json',
          Accept: 'application/json, text/event-stream',
          'Mcp-Session-Id': sessionId,
          'MCP-Protocol-Version': '2025-11-25',
        },
      },
      (res) => {
        res.resume();
        res.on('end', () =>
          resolve([res.statusCode ?? 0, String(res.headers['x-moonhub-instance'])]),
        );
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

describe('answers with forged ids through --workers 2', () => {
  it('are refused where they land: the primary relays nothing, RSS bounded, honest calls served', async () => {
    const [a, b] = instancesOf(hub.log());
    const other = (at: string) => (at === a ? b! : a!);
    const { sessionId } = await initializeSession(hub.url, undefined, { elicitation: {} });
    const padding = 'x'.repeat(PAD);
    const answer = (id: string) =>
      `{"jsonrpc":"2.0","id":"${id}","result":{"action":"accept","content":{"name":"${padding}"}}}`;
    const honest = await honestClient(hub.url, 'probe.echo');
    const primary = hub.child.pid!;
    const rssBefore = clusterRss(primary);
    let maxRss = rssBefore;
    const sampler = setInterval(() => (maxRss = Math.max(maxRss, clusterRss(primary))), 100);
    const cpuBefore = cpuMs(primary);
    let sent = 0;
    let n = 0;
    const end = Date.now() + FLOOD_MS;
    const flood = async () => {
      const agent = new Agent({ keepAlive: true, maxSockets: 1 });
      // The first answer learns which worker this connection reaches; then every id names the
      // other one: two in three in the old shape, one in the tagged shape with a made-up tag.
      let at = a!;
      try {
        while (Date.now() < end) {
          const k = ++n;
          const id =
            k % 2 === 0
              ? `moonhub-${other(at)}-${k}`
              : `moonhub-${other(at)}-${k}-${'A'.repeat(22)}`;
          const [status, instance] = await postAnswer(agent, sessionId, answer(id));
          assert.equal(status, 202);
          at = instance;
          sent++;
        }
      } finally {
        agent.destroy();
      }
    };
    try {
      await Promise.all(Array.from({ length: WIDTH }, flood));
    } finally {
      clearInterval(sampler);
    }
    const primaryCpu = cpuMs(primary) - cpuBefore;
    const h = await honest.stop();
    const info = `${sent} forged answers of ${(PAD / 2 ** 20).toFixed(1)} MiB in ${FLOOD_MS} ms; primary CPU ${primaryCpu} ms; RSS ${rssBefore.toFixed(0)} -> max ${maxRss.toFixed(0)} MiB; honest ${h.count} calls, p50 ${h.p50.toFixed(1)} ms, p99 ${h.p99.toFixed(1)} ms`;
    process.stderr.write(`${info}\n`);
    assert.ok(sent >= 10, info);
    // Before: every forged answer crossed the primary (parsed and sent on), ~1.5 s of its CPU.
    assert.ok(primaryCpu < PRIMARY_CPU_BOUND_MS, info);
    assert.ok(maxRss - rssBefore < GROWTH_BOUND_MIB, info);
    assert.equal(h.errors, 0, h.messages.join('; '));
    assert.ok(h.count > 0 && h.p50 < 200, info);
  });
});
