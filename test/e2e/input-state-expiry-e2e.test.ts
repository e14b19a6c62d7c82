/**
 * 2026-07-28 request states expire (`limits.request_state_ttl_ms`): a retry carrying a state older
 * than the TTL is refused with -32602 `input_state_invalid` saying it expired, in one real hub
 * process and across two real instances on one real redis-server (the state sealed by A, the
 * retry on B); a prompt retry still completes, on either.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { skipWithout } from '../helpers/services.js';
import { makeHubDir, type HubDir } from '../helpers/auth-hub.js';
import { startMoonhub, type MoonhubProcess } from '../helpers/moonhub-process.js';
import {
  PROBE_PLUGIN,
  askProbe,
  sleep,
  startRedisFleet,
  type RedisFleet,
} from '../helpers/cluster-fixture.js';

const ask = async (url: string, token: string | undefined, extra: Record<string, unknown> = {}) =>
  (await askProbe(url, token, extra)).body;

/** The state and answers of a first round asked through `url`. */
async function firstRound(url: string, token: string | undefined) {
  const first = await ask(url, token);
  assert.equal(first.result?.resultType, 'input_required', JSON.stringify(first));
  const key = Object.keys(first.result!.inputRequests as object)[0]!;
  return {
    requestState: first.result!.requestState as string,
    inputResponses: { [key]: { action: 'accept', content: { name: 'ada' } } },
  };
}

/** A prompt retry completes; the same retry after the TTL is refused as expired. */
async function expiresAfter(ttlMs: number, issue: string, retry: string, token?: string) {
  const prompt = await ask(retry, token, await firstRound(issue, token));
  assert.equal(prompt.result?.resultType, 'complete', JSON.stringify(prompt));
  assert.match(JSON.stringify(prompt.result!.content), /hello ada/);
  const state = await firstRound(issue, token);
  await sleep(ttlMs + 500);
  const late = await ask(retry, token, state);
  assert.equal(late.error?.code, -32602, JSON.stringify(late));
  assert.match(late.error!.message, /requestState expired: issued \d+ s ago/);
  assert.match(late.error!.message, /limits\.request_state_ttl_ms/);
}

describe('2026-07-28 request states expire in one process', () => {
  let dir: HubDir;
  let hub: MoonhubProcess;
  before(async () => {
    dir = makeHubDir({ probe: PROBE_PLUGIN });
    const cfg = dir.write(
      'moonhub.yaml',
      'plugins: { dirs: [plugins] }\nlimits: { request_state_ttl_ms: 1000 }\n',
    );
    hub = await startMoonhub(['--config', cfg, '--data', dir.data, '--no-watch']);
  });
  after(async () => hub?.stop());

  it('refuses a retry whose state is older than limits.request_state_ttl_ms', async () => {
    await expiresAfter(1000, hub.url, hub.url);
  });
});

describe(
  '2026-07-28 request states expire across instances on Redis',
  { skip: skipWithout('redis-server') },
  () => {
    let fleet: RedisFleet;
    before(async () => {
      fleet = await startRedisFleet({
        instances: 2,
        plugins: { probe: PROBE_PLUGIN },
        config: (redis) => `
hub_id: expiry
auth: { mode: token }
plugins: { dirs: [plugins] }
agents: { worker: {} }
limits: { request_state_ttl_ms: 1500 }
cluster: { redis: "${redis}" }
`,
      });
    });
    after(async () => fleet?.stop());

    it('a state sealed by A is refused by B once older than the TTL', async () => {
      const { token } = await fleet.newToken();
      await expiresAfter(1500, fleet.hubs[0]!.url, fleet.hubs[1]!.url, token);
    });
  },
);
