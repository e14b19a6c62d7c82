/**
 * The cluster's shared SSE event log (issue 16): every event of a resumable 2025 POST stream is
 * kept on Redis so that another instance can resume it. It was bounded per stream (1,000 events
 * of up to 1 MiB) and by TTL, not in total: a client whose streams were cut off before their
 * answer left everything they logged on Redis for ten minutes, each stream up to 250 times what
 * the writing process itself keeps of it. Now `cluster.limits.event_log_bytes` (all streams) and
 * `event_log_bytes_per_principal` bound it; the streams written least recently go whole, and a
 * resumption of one gets 404 as an expired stream does.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { skipWithout } from '../helpers/services.js';
import { startRedisFleet, type RedisFleet } from '../helpers/cluster-fixture.js';
import { call, initializeSession, rawRequest } from '../helpers/legacy-raw.js';

const PLUGIN = `
mcp.tool("chatty", { description = "logs n lines of 32 KiB, then waits", timeout_ms = 60000 },
  function(params, context)
    local line = string.rep("z", 32 * 1024)
    for i = 1, params.n do context.log("warning", line) end
    task.sleep(params.wait or 20000)
    return "chatty done"
  end)
`;

const PER_PRINCIPAL = 4 * 1024 * 1024;
const config = (redis: string) => `
hub_id: evlog
auth: { mode: token }
plugins: { dirs: [plugins] }
agents: { worker: {} }
# Every line reaches the stream whole: the flood is what the log keeps, not what a bound cut.
plugin_limits: { message_bytes: 65536, messages_per_second: 5000 }
limits: { notices: { per_second: 5000, burst: 5000 } }
cluster:
  redis: "${redis}"
  limits: { event_log_bytes: 16777216, event_log_bytes_per_principal: ${PER_PRINCIPAL} }
`;

/** Streams of 3.2 MiB each the flooding principal leaves behind (each one's events ~100 kept). */
const FLOOD_STREAMS = 6;

describe('the shared event log on Redis', { skip: skipWithout('redis-server') }, () => {
  let fleet: RedisFleet;
  let redis: Redis;
  let writer: string;
  let resumer: string;

  before(async () => {
    fleet = await startRedisFleet({ instances: 2, plugins: { chatty: PLUGIN }, config });
    [writer, resumer] = fleet.hubs.map((h) => h.url) as [string, string];
    redis = new Redis(fleet.redis.url);
  });
  after(async () => {
    redis?.disconnect();
    await fleet?.stop();
  });

  async function usedMemory(): Promise<number> {
    return Number(/used_memory:(\d+)/.exec(await redis.info('memory'))![1]);
  }

  /** A chatty call on the writer, cut off once its `n` lines arrived; its stream's id. */
  async function cutOffStream(token: string, sessionId: string, n: number): Promise<string> {
    const running = await rawRequest(writer, {
      method: 'POST',
      token,
      sessionId,
      body: call('tools/call', { name: 'chatty', arguments: { n } }),
    });
    assert.equal(running.status, 200);
    const first = await running.waitFor(/^id: (\S+)_0$/m);
    for (let i = 0; running.text().split('notifications/message').length - 1 < n; i++) {
      assert.ok(
        i < 500,
        `${running.text().split('notifications/message').length - 1} of ${n} lines arrived: ${running
          .text()
          .replace(/z{100,}/g, 'Z…')
          .slice(-800)}`,
      );
      await new Promise((r) => setTimeout(r, 10));
    }
    running.close();
    return /^id: (\S+)_0$/m.exec(first)![1]!;
  }

  async function resume(token: string, sessionId: string, stream: string) {
    const r = await rawRequest(resumer, {
      method: 'GET',
      token,
      sessionId,
      headers: { 'Last-Event-ID': `${stream}_0` },
    });
    const status = r.status;
    const text = status === 200 ? await r.waitFor(/notifications\/message/) : await r.done;
    r.close();
    return { status, text, instance: r.instance };
  }

  it("one principal's cut-off streams are held to its share; the oldest answer 404 as expired ones; another's stay", async () => {
    const honest = await fleet.newToken();
    const hs = (await initializeSession(writer, honest.token)).sessionId;
    const honestStream = await cutOffStream(honest.token, hs, 5);

    const flood = await fleet.newToken();
    const fs = (await initializeSession(writer, flood.token)).sessionId;
    const memBefore = await usedMemory();
    const streams: string[] = [];
    for (let i = 0; i < FLOOD_STREAMS; i++) streams.push(await cutOffStream(flood.token, fs, 100));
    await new Promise((r) => setTimeout(r, 300)); // the last appends land
    const grown = (await usedMemory()) - memBefore;
    process.stderr.write(
      `${FLOOD_STREAMS} streams of 100 x 32 KiB: Redis grew ${(grown / 2 ** 20).toFixed(1)} MiB\n`,
    );
    // Before: all of it stayed (~19 MiB); now at most the principal's share and bookkeeping.
    assert.ok(grown < PER_PRINCIPAL + 3 * 2 ** 20, `Redis grew ${grown} bytes`);

    const oldest = await resume(flood.token, fs, streams[0]!);
    assert.notEqual(oldest.instance, '');
    assert.equal(oldest.status, 404, oldest.text);
    assert.match(oldest.text, /no stream to resume/);
    const expired = await resume(flood.token, fs, 'feedfacefeedface');
    assert.equal(expired.status, 404);
    assert.equal(
      oldest.text.replace(streams[0]!, 'X'),
      expired.text.replace('feedfacefeedface', 'X'),
      'the same answer as a stream nothing is known of',
    );
    const newest = await resume(flood.token, fs, streams.at(-1)!);
    assert.equal(newest.status, 200, newest.text);
    // The other principal's stream, written first, was not taken for the flood.
    const kept = await resume(honest.token, hs, honestStream);
    assert.equal(kept.status, 200, kept.text);
  });
});
