/**
 * A client's answer (here to an elicitation) as large as one process accepts must cross between
 * instances too: a client should not see a smaller limit because the hub runs two processes.
 * Two real hub processes on one real redis-server with the default `cluster.limits`; the call
 * waits on B, the 3 MiB answer lands on A and is forwarded. Before, the default
 * `max_forwarded_answer_bytes` (1 MiB) failed it while one process takes bodies up to 4 MiB.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { skipWithout } from '../helpers/services.js';
import { startRedisFleet, type RedisFleet } from '../helpers/cluster-fixture.js';
import { call, initializeSession, rawRequest, sessionPost } from '../helpers/legacy-raw.js';

const BIG_PLUGIN = `
mcp.tool("big.ask", { description = "asks for a blob, tells its size" }, function(params, context)
  local a = context.elicit{ message = "blob?",
    requested_schema = { type = "object", properties = { blob = { type = "string" } } } }
  return "got " .. tostring(a.content and a.content.blob and #a.content.blob)
end)
`;

const config = (redis: string) => `
hub_id: big-answers
auth: { mode: token }
plugins: { dirs: [plugins] }
agents: { worker: {} }
cluster: { redis: "${redis}" }
`;

describe(
  'a large client answer between instances on Redis',
  { skip: skipWithout('redis-server') },
  () => {
    let fleet: RedisFleet;
    before(async () => {
      fleet = await startRedisFleet({ instances: 2, plugins: { big: BIG_PLUGIN }, config });
    });
    after(async () => fleet?.stop());

    it('a 3 MiB answer through A completes the call waiting on B (default limits)', async () => {
      const [a, b] = fleet.hubs.map((h) => h.url) as [string, string];
      const { token } = await fleet.newToken();
      const { sessionId } = await initializeSession(a, token, { elicitation: {} });
      const running = await rawRequest(b, {
        method: 'POST',
        token,
        sessionId,
        body: call('tools/call', { name: 'big.ask', arguments: {} }),
      });
      assert.equal(running.status, 200);
      const asked = await running.waitFor(/"id":"moonhub-[^"]+","method":"elicitation\/create"/);
      const id = /"id":"(moonhub-[^"]+)"/.exec(asked)![1]!;
      const size = 3 * 1024 * 1024;
      const answer = {
        jsonrpc: '2.0',
        id,
        result: { action: 'accept', content: { blob: 'z'.repeat(size) } },
      };
      const r = await sessionPost(a, token, sessionId, answer);
      assert.equal(r.status, 202, r.text);
      assert.notEqual(r.instance, running.instance, 'the answer landed on the waiting instance');
      const text = await running.waitFor(new RegExp(`got ${size}|"error"|isError`), 15_000);
      assert.match(text, new RegExp(`got ${size}`), running.text().slice(0, 2000));
    });
  },
);
