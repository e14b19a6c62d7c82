/**
 * Sessions made and revoked through the admin API of one instance, and the client's very next
 * request reaching another instance that is busy: once the admin API answered, every live
 * instance must know. Two real hub processes on one real redis-server; B's main thread is kept
 * busy by a plugin call (`isolation: none` runs Lua on it) while A revokes (or issues) a token
 * and the next request is already queued on B's connection. Before, A answered before the
 * change reached Redis, and B checked the token before it had heard the announcement.
 *
 * The same for an admin token on B's operator routes (`/metrics`, the dashboard's API): they
 * checked it at once, so a busy B woken with the revocation and the request together still
 * answered the revoked admin; they now take the MCP endpoint's one-turn wait (Redis mode only).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { skipWithout } from '../helpers/services.js';
import {
  PROBE_PLUGIN,
  SPIN_PLUGIN,
  busyInstanceConfig,
  newAdminSession,
  sleep,
  startRedisFleet,
  type RedisFleet,
} from '../helpers/cluster-fixture.js';
import { Pipeline } from '../helpers/pipeline.js';
import { Redis } from 'ioredis';

const config = busyInstanceConfig('revoke-race');

const MODERN = '2026-07-28';

/** Keeps Redis busy for ARGV[1] microseconds (scripts run alone: every client waits). */
const BUSY_SCRIPT = `
local s = redis.call('TIME')
local start = s[1] * 1000000 + s[2]
while true do
  local t = redis.call('TIME')
  if t[1] * 1000000 + t[2] - start > tonumber(ARGV[1]) then return 1 end
end`;
let nextId = 1;

/** A stateless 2026-07-28 tools/call: headers and body. */
function toolCall(token: string, name: string): [Record<string, string>, unknown] {
  return [
    {
      Authorization: `Bearer ${token}`,
      'MCP-Protocol-Version': MODERN,
      'Mcp-Method': 'tools/call',
      'Mcp-Name': name,
      'Content-Type': 'application/json',
      Accept: 'application/json, text/event-stream',
    },
    {
      jsonrpc: '2.0',
      id: nextId++,
      method: 'tools/call',
      params: {
        name,
        arguments: {},
        _meta: {
          'io.modelcontextprotocol/protocolVersion': MODERN,
          'io.modelcontextprotocol/clientCapabilities': {},
        },
      },
    },
  ];
}

async function admin(
  base: string,
  token: string,
  method: 'POST' | 'DELETE',
  path: string,
  body?: unknown,
): Promise<{ status: number; json: Record<string, unknown>; ms: number }> {
  const t0 = Date.now();
  const res = await fetch(new URL(path, base), {
    method,
    headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return {
    status: res.status,
    json: (await res.json()) as Record<string, unknown>,
    ms: Date.now() - t0,
  };
}

/**
 * Keeps B busy with `busyToken`'s spin call, runs `act` on A meanwhile, then queues a call with
 * `token` behind the spin on the same connection; returns that second answer's status and text.
 */
async function nextOnBusyB(
  b: string,
  busyToken: string,
  token: () => string,
  act: () => Promise<void>,
): Promise<{ status: number; text: string }> {
  const pipe = new Pipeline(b);
  try {
    const path = new URL(b).pathname;
    pipe.send(path, ...toolCall(busyToken, 'spin.main'));
    await sleep(100); // B is spinning: it reads nothing until the call ends
    await act();
    pipe.send(path, ...toolCall(token(), 'probe.echo'));
    const text = await pipe.waitFor(/spun[\s\S]*HTTP\/1\.1 \d{3}[\s\S]*?(echoed|revoked)/, 10_000);
    const second = text.slice(text.indexOf('spun'));
    return { status: Number(/HTTP\/1\.1 (\d{3})/.exec(second)![1]), text: second };
  } finally {
    pipe.close();
  }
}

/**
 * Keeps B busy with `busyToken`'s spin call, runs `act` on A meanwhile, then queues a GET of
 * `path` (an operator route) with `token` behind the spin; returns that answer's status.
 */
async function operatorOnBusyB(
  b: string,
  busyToken: string,
  token: string,
  path: string,
  act: () => Promise<void>,
): Promise<{ status: number; text: string }> {
  const pipe = new Pipeline(b);
  try {
    pipe.send(new URL(b).pathname, ...toolCall(busyToken, 'spin.main'));
    await sleep(100); // B is spinning: it reads nothing until the call ends
    await act();
    pipe.send(path, { Authorization: `Bearer ${token}` });
    const text = await pipe.waitFor(/spun[\s\S]*HTTP\/1\.1 \d{3}[^]*?\r\n\r\n\S/, 10_000);
    const second = text.slice(text.indexOf('spun'));
    return { status: Number(/HTTP\/1\.1 (\d{3})/.exec(second)![1]), text: second.slice(0, 2000) };
  } finally {
    pipe.close();
  }
}

/** A new admin session made with the CLI in the first instance's data folder. */
const newAdmin = (fleet: RedisFleet) => newAdminSession(fleet.dirs[0]!);

/** Waits until `base` answers `path` with 200 for `token` (the admin session reached it). */
async function acceptedBy(base: string, path: string, token: string): Promise<void> {
  for (let i = 0; ; i++) {
    const res = await fetch(new URL(path, base), { headers: { Authorization: `Bearer ${token}` } });
    await res.arrayBuffer();
    if (res.status === 200) return;
    assert.ok(i < 200, `${path} never accepted the new admin token (${res.status})`);
    await sleep(10);
  }
}

describe(
  'admin changes and the next request reaching a busy instance together',
  { skip: skipWithout('redis-server') },
  () => {
    let fleet: RedisFleet;
    let a: string;
    let b: string;
    before(async () => {
      fleet = await startRedisFleet({
        instances: 2,
        plugins: { probe: PROBE_PLUGIN, spin: SPIN_PLUGIN },
        config,
      });
      [a, b] = fleet.hubs.map((h) => h.url) as [string, string];
    });
    after(async () => fleet?.stop());

    it('a token revoked through A is refused by busy B at the very next request', async () => {
      const { token: busy } = await fleet.newToken();
      for (let round = 0; round < 4; round++) {
        const { token, uuid } = await fleet.newToken();
        const ok = await nextOnBusyB(
          b,
          busy,
          () => token,
          async () => {},
        );
        assert.equal(ok.status, 200, `round ${round}: ${ok.text}`);
        const second = await nextOnBusyB(
          b,
          busy,
          () => token,
          async () => {
            const del = await admin(a, fleet.adminToken, 'DELETE', `/admin/sessions/${uuid}`);
            assert.equal(del.status, 200);
            assert.deepEqual(del.json, { revoked: uuid, replicated: true });
          },
        );
        assert.equal(second.status, 403, `round ${round}: B accepted a revoked token`);
        assert.match(second.text, /revoked/);
      }
    });

    it('a token issued through A is accepted by busy B at the very next request', async () => {
      const { token: busy } = await fleet.newToken();
      for (let round = 0; round < 4; round++) {
        let token = '';
        const second = await nextOnBusyB(
          b,
          busy,
          () => token,
          async () => {
            const made = await admin(a, fleet.adminToken, 'POST', '/admin/sessions', {
              agent: 'worker',
            });
            assert.equal(made.status, 201);
            assert.equal(made.json.replicated, true);
            token = made.json.token as string;
          },
        );
        assert.equal(second.status, 200, `round ${round}: B refused a new token: ${second.text}`);
      }
    });

    it("an admin token revoked through A is refused by busy B's /metrics and dashboard API", async () => {
      const { token: busy } = await fleet.newToken();
      for (const path of ['/metrics', '/admin/dashboard/state']) {
        for (let round = 0; round < 3; round++) {
          const adm = newAdmin(fleet);
          await acceptedBy(b, path, adm.token);
          const ok = await operatorOnBusyB(b, busy, adm.token, path, async () => {});
          assert.equal(ok.status, 200, `${path} round ${round}: ${ok.text}`);
          const second = await operatorOnBusyB(b, busy, adm.token, path, async () => {
            const del = await admin(
              a,
              fleet.adminToken,
              'DELETE',
              `/admin/sessions/${adm.session_uuid}`,
            );
            assert.equal(del.status, 200);
            assert.equal(del.json.replicated, true);
          });
          // Before: 200, B answered the revoked admin (round 0).
          assert.equal(second.status, 401, `${path} round ${round}: ${second.text}`);
          assert.match(second.text, /invalid admin token/);
        }
      }
    });

    it('a DELETE answers only once Redis has merged it, so B refuses at once', async () => {
      const { token, uuid } = await fleet.newToken();
      const blocker = new Redis(fleet.redis.url);
      try {
        await blocker.ping();
        // Redis busy for 500 ms (a script spinning on TIME): the merge waits behind it.
        const blocked = blocker.eval(BUSY_SCRIPT, 0, '500000');
        await sleep(50);
        const del = await admin(a, fleet.adminToken, 'DELETE', `/admin/sessions/${uuid}`);
        assert.equal(del.status, 200);
        assert.equal(del.json.replicated, true);
        const next = await fetch(b, {
          method: 'POST',
          headers: toolCall(token, 'probe.echo')[0],
          body: JSON.stringify(toolCall(token, 'probe.echo')[1]),
        });
        const text = await next.text();
        assert.equal(next.status, 403, `B accepted a token revoked ${del.ms} ms before: ${text}`);
        await blocked;
      } finally {
        blocker.disconnect();
      }
    });

    it('with Redis gone, a revocation answers within the command timeout and says so', async () => {
      const { token, uuid } = await fleet.newToken();
      await fleet.redis.stop();
      const del = await admin(a, fleet.adminToken, 'DELETE', `/admin/sessions/${uuid}`);
      assert.equal(del.status, 200);
      assert.equal(del.json.revoked, uuid);
      assert.equal(del.json.replicated, false);
      assert.match(String(del.json.warning), /command_timeout_ms/);
      assert.ok(del.ms < 6000, `answered after ${del.ms} ms`);
      // A itself refuses the token at once.
      const pipe = new Pipeline(a);
      try {
        pipe.send(new URL(a).pathname, ...toolCall(token, 'probe.echo'));
        const text = await pipe.waitFor(/revoked/, 10_000);
        assert.match(text, /HTTP\/1\.1 403/);
      } finally {
        pipe.close();
      }
      await fleet.hubs[0]!.waitForLog(/not confirmed by Redis/, 0, 5000);
    });
  },
);
