/**
 * A session change announced on Redis and the client's next request arriving at a busy instance
 * together: the instance must hear the announcement before it trusts its cached copy. Two real
 * hub processes on one real redis-server; B's main thread is kept busy by a plugin call
 * (`isolation: none` runs Lua on it) while A changes the log level and the next request is
 * already queued on B's connection. Without the wait for the turn's I/O, B served the old level
 * (the CI failure of `cluster-sessions-redis-e2e` "cached copies never serve stale state").
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { skipWithout } from '../helpers/services.js';
import {
  PROBE_PLUGIN,
  SPIN_PLUGIN,
  busyInstanceConfig,
  sleep,
  startRedisFleet,
  type RedisFleet,
} from '../helpers/cluster-fixture.js';
import { call, initializeSession, LEGACY_VERSION, sessionPost } from '../helpers/legacy-raw.js';
import { Pipeline } from '../helpers/pipeline.js';

const config = busyInstanceConfig('race');

describe(
  'a session change and the next request reaching a busy instance together',
  { skip: skipWithout('redis-server') },
  () => {
    let fleet: RedisFleet;
    before(async () => {
      fleet = await startRedisFleet({
        instances: 2,
        plugins: { probe: PROBE_PLUGIN, spin: SPIN_PLUGIN },
        config,
      });
    });
    after(async () => fleet?.stop());

    it('the busy instance hears the announcement before it trusts its copy', async () => {
      const [a, b] = fleet.hubs.map((h) => `${h.url}`) as [string, string];
      const { token } = await fleet.newToken();
      const { sessionId } = await initializeSession(a, token);
      const headers = {
        Authorization: `Bearer ${token}`,
        'Mcp-Session-Id': sessionId,
        'MCP-Protocol-Version': LEGACY_VERSION,
        'Content-Type': 'application/json',
        Accept: 'application/json, text/event-stream',
      };
      const path = new URL(b).pathname;
      for (let round = 0; round < 4; round++) {
        const level = round % 2 === 0 ? 'warning' : 'info';
        // B reads the record and holds a copy it knows fresh.
        for (let i = 0; i < 2; i++)
          assert.equal(
            (await sessionPost(b, token, sessionId, call('tools/call', { name: 'probe.echo' })))
              .status,
            200,
          );
        const pipe = new Pipeline(b);
        try {
          pipe.send(path, headers, call('tools/call', { name: 'spin.main', arguments: {} }));
          await sleep(100); // B is spinning: it reads nothing until the call ends
          const set = await sessionPost(a, token, sessionId, call('logging/setLevel', { level }));
          assert.equal(set.status, 200, set.text);
          // Announced before answered: the announcement is on B's socket before this request.
          pipe.send(path, headers, call('tools/call', { name: 'probe.log', arguments: {} }));
          const text = await pipe.waitFor(/spun[\s\S]*logged/, 10_000);
          const second = text.slice(text.indexOf('spun'));
          assert.match(second, /warning-line/);
          if (level === 'warning')
            assert.doesNotMatch(second, /info-line/, `round ${round}: B served a stale log level`);
          else assert.match(second, /info-line/, `round ${round}: B served a stale log level`);
        } finally {
          pipe.close();
        }
      }
    });
  },
);
