/**
 * Resumable event streams (2025-11-25, SEP-1699) that no client is connected to, against a real
 * hub with token authentication. A client that starts chatty calls and drops each connection at
 * the priming event leaves the hub holding every call's events for a resumption that never
 * comes: up to `limits.streams.buffer_bytes` per call, 64 calls per session, for as many
 * sessions as the principal may open. Measured before the bound, this test's 4 sessions x 64
 * calls took the hub from 173 MiB to 1,008 MiB RSS, kept until the sessions' idle timeout
 * (30 min), and the oldest stream was still resumable. Now a principal's
 * parked streams keep at most `limits.streams.parked_bytes_per_principal`: its oldest are
 * forgotten (a resumption gets 404, the call is aborted, the refusal counted), another
 * principal's parked stream is untouched, and other clients are served meanwhile.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { issueOverAdminApi, makeHubDir, type HubDir, type Issued } from '../helpers/auth-hub.js';
import { initializeSession, rawRequest, type RawResponse } from '../helpers/legacy-raw.js';
import { startMoonhub, type MoonhubProcess } from '../helpers/moonhub-process.js';
import { adminToken, baseOf, sample, scrape } from '../helpers/operations.js';
import { rssMiB } from './helpers.js';
import { pool, sleep } from './limits-helpers.js';

/** 200 log messages of 16,000 characters (3.2 MB, within every default notice bound). */
const PLUGIN = `
local big = string.rep("x", 16000)
mcp.tool("p.chatty", { description = "talks, then answers" }, function(_, context)
  for i = 1, 200 do context.log("info", big) end
  task.sleep(200)
  return "chatty done"
end)
mcp.tool("p.ok", { description = "ok" }, function() return "ok" end)
`;

const PARKED_CAP = 16 * 1024 * 1024;

const CONFIG = `
auth: { mode: token }
plugins: { dirs: [plugins] }
agents:
  A: { plugins: [p], builtins: [] }
  B: { plugins: [p], builtins: [] }
# The plugin's default 200 messages a second would only slow the attack down (an execute
# script gets its own 200 per run): raised so the test takes seconds.
plugin_limits: { messages_per_second: 100000 }
limits:
  streams: { parked_bytes_per_principal: ${PARKED_CAP} }
`;

/** The attack: sessions x calls, each connection dropped at its priming event. */
const SESSIONS = 4;
const CALLS = 64;
/**
 * What the hub may hold once the calls ended, and at its peak (the calls' messages in flight,
 * garbage not yet collected). Unbounded it kept SESSIONS x CALLS x 3.2 MB, about 800 MiB.
 */
const RSS_GROWTH_MIB = 250;
const RSS_PEAK_MIB = 400;
/** An honest request's latency meanwhile, at most (a loaded 2-core machine). */
const HONEST_MAX_MS = 2000;

let nextId = 1;
const chatty = () => ({
  jsonrpc: '2.0',
  id: nextId++,
  method: 'tools/call',
  params: { name: 'p.chatty', arguments: {} },
});

/** Starts p.chatty and drops the connection at the priming event: the stream's id. */
async function parkOne(url: string, token: string, sessionId: string): Promise<string> {
  const res = await rawRequest(url, { method: 'POST', token, sessionId, body: chatty() });
  assert.equal(res.status, 200);
  const primed = await res.waitFor(/id: ([0-9a-f]+)_0\n/);
  res.close();
  return /id: ([0-9a-f]+)_0/.exec(primed)![1]!;
}

function resume(url: string, token: string, sessionId: string, stream: string) {
  return rawRequest(url, {
    method: 'GET',
    token,
    sessionId,
    headers: { 'Last-Event-ID': `${stream}_0` },
  });
}

describe('resumable streams nobody comes back for', () => {
  let dir: HubDir;
  let hub: MoonhubProcess;
  let A: Issued;
  let B: Issued;
  let admin: string;

  before(async () => {
    dir = makeHubDir({ p: PLUGIN });
    const file = dir.write('moonhub.yaml', CONFIG);
    hub = await startMoonhub(['--config', file, '--data', dir.data, '--no-watch']);
    admin = adminToken(dir.data);
    // The agents' sessions over the admin API: what `session create` does, without a CLI start each.
    A = await issueOverAdminApi(hub.url, admin, 'A');
    B = await issueOverAdminApi(hub.url, admin, 'B');
  });
  after(async () => {
    await hub?.stop();
  });

  it("are bounded per principal; another principal's stream and calls are untouched", async (t) => {
    const url = hub.url;
    // B's call, parked first (the oldest of all), fetched after A's flood.
    const bSession = (await initializeSession(url, B.token)).sessionId;
    const bStream = await parkOne(url, B.token, bSession);

    // An honest client (B) calls a tool back to back while A floods.
    let running = true;
    const honest: { ms: number; ok: boolean }[] = [];
    const honestLoop = (async () => {
      const sid = (await initializeSession(url, B.token)).sessionId;
      while (running) {
        const t0 = performance.now();
        const body = {
          jsonrpc: '2.0',
          id: nextId++,
          method: 'tools/call',
          params: { name: 'p.ok' },
        };
        const res = await rawRequest(url, { method: 'POST', token: B.token, sessionId: sid, body });
        const text = await res.done;
        honest.push({ ms: performance.now() - t0, ok: res.status === 200 && /"ok"/.test(text) });
        await sleep(20);
      }
    })();

    const pid = hub.child.pid!;
    await sleep(300);
    const rssBefore = rssMiB(pid);
    let rssMax = rssBefore;
    const sampler = setInterval(() => (rssMax = Math.max(rssMax, rssMiB(pid))), 50);
    const aStreams: { session: string; stream: string }[] = [];
    try {
      const sessions = await pool(SESSIONS, SESSIONS, async () => {
        return (await initializeSession(url, A.token)).sessionId;
      });
      await pool(SESSIONS * CALLS, 4, async (i) => {
        const session = sessions[i % SESSIONS]!;
        aStreams[i] = { session, stream: await parkOne(url, A.token, session) };
      });
      await sleep(1000); // the last calls finish into their parked streams
    } finally {
      clearInterval(sampler);
      running = false;
      await honestLoop;
    }
    const grown = rssMax - rssBefore;
    const kept = rssMiB(pid) - rssBefore;
    t.diagnostic(
      `RSS ${Math.round(rssBefore)} MiB, peak +${Math.round(grown)}, now +${Math.round(kept)}`,
    );

    // A's oldest parked stream was forgotten: its resumption is refused like an unknown one.
    const first = aStreams[0]!;
    const gone = await resume(url, A.token, first.session, first.stream);
    const goneText = await gone.done;
    assert.equal(gone.status, 404, goneText);
    assert.match(goneText, /no stream to resume/);
    // A's newest one is still there, with its answer.
    const last = aStreams[aStreams.length - 1]!;
    const newest = await resume(url, A.token, last.session, last.stream);
    assert.equal(newest.status, 200);
    assert.match(await newest.done, /chatty done/);

    // B's stream, parked before all of A's, is whole.
    const bResumed: RawResponse = await resume(url, B.token, bSession, bStream);
    assert.equal(bResumed.status, 200);
    assert.match(await bResumed.done, /chatty done/);

    const metrics = await scrape(baseOf(url), admin);
    const forgotten = sample(metrics, 'moonhub_limit_refusals_total', { limit: 'parked_streams' });
    t.diagnostic(`parked streams forgotten: ${forgotten}`);
    assert.ok(forgotten > 0, 'the forgotten streams are counted');

    const worst = Math.max(...honest.map((h) => h.ms));
    t.diagnostic(`honest calls ${honest.length}, slowest ${Math.round(worst)} ms`);
    assert.ok(honest.length > 0 && honest.every((h) => h.ok), 'every honest call answered');
    assert.ok(worst < HONEST_MAX_MS, `an honest call took ${Math.round(worst)} ms`);
    assert.ok(grown < RSS_PEAK_MIB, `RSS peaked ${Math.round(grown)} MiB over the start`);
    assert.ok(kept < RSS_GROWTH_MIB, `RSS stayed ${Math.round(kept)} MiB over the start`);
  });
});
