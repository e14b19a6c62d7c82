/**
 * Two real hub processes sharing one real redis-server, behind a real nginx round-robin, in
 * token mode with separate data folders (as on two machines): a session issued through one is
 * served by both; a revocation through one instance's admin API is refused by the other within a
 * second; `mcp.resource_updated` on one instance reaches a 2026-07-28 listener on the other; an
 * instance killed with SIGKILL leaves the clients carrying on through the other.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startMoonhub, type MoonhubProcess } from '../helpers/moonhub-process.js';
import { makeHubDir, moonhubCli, rawPost, type HubDir } from '../helpers/auth-hub.js';
import { skipWithout, startNginx, startRedis, type Service } from '../helpers/services.js';

const PLUGIN = `
mcp.tool("probe.echo", { description = "echo" }, function(params, context)
  return { session_uuid = context.session_uuid, agent = context.agent_name }
end)
mcp.tool("probe.touch", { description = "tells subscribers the resource changed" }, function()
  mcp.resource_updated("probe://watched")
  return "touched"
end)
mcp.resource("probe://watched", { name = "watched" }, function() return "w" end)
`;

const config = (redis: string | undefined) => `
hub_id: fleet
auth: { mode: token }
plugins: { dirs: [plugins] }
agents: { worker: {} }
${redis === undefined ? '' : `cluster: { redis: "${redis}" }`}
`;

const LIST = { method: 'tools/list', params: {} };
const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });

async function admin(
  base: string,
  token: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; json: Record<string, unknown> }> {
  const res = await fetch(new URL(path, base), {
    method,
    headers: { ...bearer(token), ...(body ? { 'Content-Type': 'application/json' } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, json: (await res.json()) as Record<string, unknown> };
}

describe(
  'instances across machines on Redis',
  { skip: skipWithout('redis-server') || skipWithout('nginx') },
  () => {
    let redis: Service;
    let nginx: Service;
    let dirA: HubDir;
    let dirB: HubDir;
    let hubA: MoonhubProcess;
    let hubB: MoonhubProcess;
    let adminToken: string;
    let agentToken: string;

    before(async () => {
      redis = await startRedis();
      dirA = makeHubDir({ probe: PLUGIN });
      dirB = makeHubDir({ probe: PLUGIN });
      const cfgA = dirA.write('moonhub.yaml', config(redis.url)); // through the config file
      const cfgB = dirB.write('moonhub.yaml', config(undefined)); // through --redis
      [hubA, hubB] = await Promise.all([
        startMoonhub(['--config', cfgA, '--data', dirA.data]),
        startMoonhub(['--config', cfgB, '--data', dirB.data, '--redis', redis.url]),
      ]);
      nginx = await startNginx([new URL(hubA.url).host, new URL(hubB.url).host]);
      // An admin session made by the CLI on A's folder reaches B through Redis.
      const r = moonhubCli(['session', 'create', '--admin', '--config', cfgA, '--data', dirA.data]);
      assert.equal(r.status, 0, r.stderr);
      adminToken = (JSON.parse(r.stdout) as { token: string }).token;
    });
    after(async () => {
      await Promise.allSettled([hubA?.stop(), hubB?.stop()]);
      await Promise.allSettled([nginx?.stop(), redis?.stop()]);
    });

    it('a session issued through one instance is served by both, behind round-robin', async () => {
      const created = await admin(nginx.url, adminToken, 'POST', '/admin/sessions', {
        agent: 'worker',
      });
      assert.equal(created.status, 201);
      agentToken = created.json.token as string;
      const instances = new Set<string>();
      for (let i = 0; i < 6; i++) {
        const res = await rawPost(`${nginx.url}/mcp`, LIST, bearer(agentToken));
        assert.equal(res.status, 200, res.text);
        assert.match(res.text, /probe\.echo/);
        instances.add(res.headers.get('x-moonhub-instance') ?? '?');
      }
      assert.equal(instances.size, 2, `answered by ${[...instances].join(', ')}`);
    });

    it('a revocation through one instance is refused by the other within a second', async () => {
      const created = await admin(hubA.url, adminToken, 'POST', '/admin/sessions', {
        agent: 'worker',
      });
      const token = created.json.token as string;
      const uuid = created.json.session_uuid as string;
      // Known on B before the revocation (replicated), so B's refusal is the revocation's doing.
      for (;;) {
        const r = await rawPost(hubB.url, LIST, bearer(token));
        if (r.status === 200) break;
        await new Promise((res) => setTimeout(res, 10));
      }
      const revoked = await admin(hubB.url, adminToken, 'DELETE', `/admin/sessions/${uuid}`);
      assert.equal(revoked.status, 200);
      const start = Date.now();
      for (;;) {
        const r = await rawPost(hubA.url, LIST, bearer(token));
        if (r.status === 403) break;
        assert.ok(Date.now() - start < 1000, 'still accepted by the other instance after 1 s');
        await new Promise((res) => setTimeout(res, 5));
      }
      const ms = Date.now() - start;
      process.stderr.write(`revocation seen by the other instance after ${ms} ms\n`);
      for (let i = 0; i < 4; i++)
        assert.equal((await rawPost(`${nginx.url}/mcp`, LIST, bearer(token))).status, 403);
    });

    it('mcp.resource_updated on one instance reaches a listener on the other', async () => {
      const ctl = new AbortController();
      const res = await fetch(hubB.url, {
        method: 'POST',
        signal: ctl.signal,
        headers: {
          ...bearer(agentToken),
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-protocol-version': '2026-07-28',
          'mcp-method': 'subscriptions/listen',
        },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 'sub-1',
          method: 'subscriptions/listen',
          params: {
            notifications: { resourceSubscriptions: ['probe://watched'] },
            _meta: {
              'io.modelcontextprotocol/protocolVersion': '2026-07-28',
              'io.modelcontextprotocol/clientCapabilities': {},
            },
          },
        }),
      });
      assert.equal(res.status, 200);
      const reader = res.body!.getReader();
      let text = '';
      const readUntil = async (re: RegExp) => {
        while (!re.test(text)) {
          const { value, done } = await reader.read();
          assert.ok(!done, 'the stream ended early');
          text += new TextDecoder().decode(value);
        }
      };
      await readUntil(/subscriptions\/acknowledged/);
      const start = Date.now();
      const touched = await rawPost(
        hubA.url,
        { method: 'tools/call', params: { name: 'probe.touch', arguments: {} } },
        bearer(agentToken),
      );
      assert.equal(touched.status, 200, touched.text);
      await readUntil(/notifications\/resources\/updated/);
      process.stderr.write(`resource update crossed instances in ${Date.now() - start} ms\n`);
      assert.match(text, /"uri":"probe:\/\/watched"/);
      ctl.abort();
    });

    it('a 2026-07-28 tools/call sends no command to Redis', async () => {
      const { Redis } = await import('ioredis');
      const monitor = new Redis(redis.url);
      const seen: string[] = [];
      const m = await monitor.monitor();
      m.on('monitor', (_time: string, args: string[]) => seen.push(args.join(' ')));
      // Warm up (a first call may open things), then count.
      const call = { method: 'tools/call', params: { name: 'probe.echo', arguments: {} } };
      assert.equal((await rawPost(hubA.url, call, bearer(agentToken))).status, 200);
      await new Promise((r) => setTimeout(r, 100));
      seen.length = 0;
      for (let i = 0; i < 20; i++) {
        const r = await rawPost(hubA.url, call, bearer(agentToken));
        assert.equal(r.status, 200, r.text);
      }
      // The monitor works: a command of our own shows up, and nothing else did.
      const probe = new Redis(redis.url);
      await probe.get('monitor-check');
      await new Promise((r) => setTimeout(r, 200));
      probe.disconnect();
      m.disconnect();
      monitor.disconnect();
      // The instance-liveness heartbeat (a timer, once a second, whatever the traffic) is not
      // a call's; anything else is.
      assert.deepEqual(
        seen.filter(
          (c) => !/^(client|hello|info)\b/i.test(c) && !/^set \S+:alive:\S+ 1 PX \d+$/i.test(c),
        ),
        ['get monitor-check'],
        'Redis commands during 20 calls',
      );
    });

    it('an instance killed mid-run: clients carry on through the other', async () => {
      hubB.child.kill('SIGKILL');
      await new Promise((r) => hubB.child.once('exit', r));
      let lost = 0;
      for (let i = 0; i < 6; i++) {
        let res = await rawPost(`${nginx.url}/mcp`, LIST, bearer(agentToken)).catch(
          () => undefined,
        );
        // A request on a connection to the dead instance is lost; the client's one retry lands.
        if (res?.status !== 200) {
          lost++;
          res = await rawPost(`${nginx.url}/mcp`, LIST, bearer(agentToken));
        }
        assert.equal(res.status, 200, res.text);
        assert.equal(res.headers.get('x-moonhub-instance'), hubAInstance());
      }
      assert.ok(lost <= 2, `${lost} requests lost`);
    });

    const hubAInstance = () => /instance ([0-9a-f]{12})/.exec(hubA.log())?.[1];
  },
);
