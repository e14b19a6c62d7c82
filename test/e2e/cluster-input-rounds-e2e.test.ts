/**
 * 2026-07-28 input rounds across processes: a tool's elicitation becomes `input_required` with a
 * sealed `requestState`, and the client's retry may land on any process of the hub. Three real
 * instances on one real redis-server behind a real nginx round-robin, and one `serve --workers 2`
 * hub: a state issued by one process is accepted by every other, a tampered one and another
 * principal's replay are refused everywhere.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { skipWithout } from '../helpers/services.js';
import {
  PROBE_PLUGIN,
  startRedisFleet,
  startWorkersHub,
  askProbe,
  type RedisFleet,
  type WorkersHub,
} from '../helpers/cluster-fixture.js';

const ask = askProbe; // each on a connection of its own: the balancer picks a process

/**
 * Asks once, then retries with the state and the answer until every process has answered a retry
 * (at most `tries`): each must complete the call with the answer the state carries.
 */
async function retriedEverywhere(url: string, token: string, processes: number, tries: number) {
  const first = await ask(url, token);
  assert.equal(first.body.result?.resultType, 'input_required', JSON.stringify(first.body));
  const requestState = first.body.result!.requestState as string;
  const key = Object.keys(first.body.result!.inputRequests as object)[0]!;
  const inputResponses = { [key]: { action: 'accept', content: { name: 'ada' } } };
  const seen = new Set<string>();
  for (let i = 0; i < tries && seen.size < processes; i++) {
    const retry = await ask(url, token, { requestState, inputResponses });
    assert.equal(retry.status, 200);
    assert.equal(
      retry.body.result?.resultType,
      'complete',
      `retry on ${retry.instance} (state from ${first.instance}): ${JSON.stringify(retry.body)}`,
    );
    assert.match(JSON.stringify(retry.body.result!.content), /hello ada/);
    seen.add(retry.instance);
  }
  assert.equal(seen.size, processes, `retries answered by ${[...seen].join(', ')}`);
  assert.ok(seen.has(first.instance) && seen.size > 1, 'a process other than the asker answered');
  return { requestState, inputResponses };
}

/** A tampered state and another principal's replay are refused with -32602 by every process. */
async function refusedEverywhere(
  url: string,
  other: string,
  state: { requestState: string; inputResponses: Record<string, unknown> },
  processes: number,
) {
  const seen = new Set<string>();
  for (let i = 0; i < processes * 4 && seen.size < processes; i++) {
    const tampered = await ask(url, other, { ...state, requestState: state.requestState + 'x' });
    assert.equal(tampered.body.error?.code, -32602, JSON.stringify(tampered.body));
    assert.match(tampered.body.error!.message, /integrity check/);
    const replayed = await ask(url, other, state);
    assert.equal(replayed.body.error?.code, -32602, JSON.stringify(replayed.body));
    assert.match(replayed.body.error!.message, /another request/);
    seen.add(tampered.instance).add(replayed.instance);
  }
  assert.equal(seen.size, processes);
}

describe(
  '2026-07-28 input rounds across instances on Redis, behind nginx',
  { skip: skipWithout('redis-server') || skipWithout('nginx') },
  () => {
    let fleet: RedisFleet;
    before(async () => {
      fleet = await startRedisFleet({
        instances: 3,
        plugins: { probe: PROBE_PLUGIN },
        config: (redis) => `
hub_id: fleet
auth: { mode: token }
plugins: { dirs: [plugins] }
agents: { worker: {} }
cluster: { redis: "${redis}" }
`,
        nginx: true,
      });
    });
    after(async () => fleet?.stop());

    it('a state issued by one instance completes the retry on every instance', async () => {
      const { token } = await fleet.newToken();
      const { token: other } = await fleet.newToken();
      const state = await retriedEverywhere(fleet.mcp, token, 3, 12);
      await refusedEverywhere(fleet.mcp, other, state, 3);
    });
  },
);

describe('2026-07-28 input rounds across `serve --workers 2`', () => {
  let w: WorkersHub;
  before(async () => {
    w = await startWorkersHub({
      plugins: { probe: PROBE_PLUGIN },
      config: `
hub_id: local
auth: { mode: token }
plugins: { dirs: [plugins] }
agents: { worker: {} }
cluster: { workers: 2 }
`,
    });
  });
  after(async () => w?.hub.stop());

  it('a state issued by one worker completes the retry on the other', async () => {
    const state = await retriedEverywhere(w.hub.url, w.newToken(), 2, 16);
    await refusedEverywhere(w.hub.url, w.newToken(), state, 2);
  });
});
