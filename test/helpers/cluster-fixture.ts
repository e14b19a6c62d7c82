/**
 * The setups the cluster and workers e2e tests share: real hub processes on one real
 * redis-server (each with its own data folder, as on separate machines), optionally behind a
 * real nginx round-robin, with an admin token and fresh session tokens that every instance
 * already knows; and one `serve --workers N` hub with its workers ready.
 */
import assert from 'node:assert/strict';
import { startMoonhub, type MoonhubProcess } from './moonhub-process.js';
import { createSession, makeHubDir, moonhubCli, type HubDir } from './auth-hub.js';
import { startNginx, startRedis, type Service } from './services.js';
import { call, rawRequest } from './legacy-raw.js';

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export interface RedisFleet {
  redis: Service;
  /** Present when asked for: round-robin over every instance. */
  nginx: Service | undefined;
  dirs: HubDir[];
  hubs: MoonhubProcess[];
  adminToken: string;
  /** The MCP endpoint: through nginx when there is one, else the first instance's. */
  mcp: string;
  /** A new session token (admin API), once every live instance accepts it. */
  newToken(agent?: string): Promise<{ token: string; uuid: string }>;
  stop(): Promise<void>;
}

export interface RedisFleetOptions {
  instances: number;
  /** Plugin files (name → Lua source) each instance loads. */
  plugins: Record<string, string>;
  /** The config file of each instance, given the redis URL and the instance's index. */
  config: (redisUrl: string, index: number) => string;
  nginx?: boolean;
  /** More `serve` arguments for every instance (e.g. `--no-watch`). */
  args?: string[];
}

export async function startRedisFleet(opts: RedisFleetOptions): Promise<RedisFleet> {
  const redis = await startRedis();
  const dirs: HubDir[] = [];
  const hubs: MoonhubProcess[] = [];
  let nginx: Service | undefined;
  const stop = async () => {
    await Promise.allSettled(hubs.map((h) => h.stop()));
    await Promise.allSettled([nginx?.stop(), redis.stop()]);
  };
  try {
    for (let i = 0; i < opts.instances; i++) dirs.push(makeHubDir(opts.plugins));
    const started = await Promise.allSettled(
      dirs.map((d, i) =>
        startMoonhub([
          '--config',
          d.write('moonhub.yaml', opts.config(redis.url, i)),
          '--data',
          d.data,
          ...(opts.args ?? []),
        ]),
      ),
    );
    for (const s of started) if (s.status === 'fulfilled') hubs.push(s.value);
    for (const s of started) if (s.status === 'rejected') throw s.reason;
    if (opts.nginx === true) nginx = await startNginx(hubs.map((h) => new URL(h.url).host));
  } catch (err) {
    await stop();
    throw err;
  }
  const adminToken = adminTokenOf(dirs[0]!);
  const base = nginx?.url ?? hubs[0]!.url;
  const mcp = nginx === undefined ? hubs[0]!.url : `${nginx.url}/mcp`;
  return {
    redis,
    nginx,
    dirs,
    hubs,
    adminToken,
    mcp,
    stop,
    async newToken(agent = 'worker') {
      const res = await fetch(new URL('/admin/sessions', base), {
        method: 'POST',
        headers: { Authorization: `Bearer ${adminToken}`, 'Content-Type': 'application/json' },
        body: JSON.stringify({ agent }),
      });
      assert.equal(res.status, 201);
      const j = (await res.json()) as { token: string; session_uuid: string };
      await replicated(
        hubs.filter((h) => h.alive()),
        j.token,
      );
      return { token: j.token, uuid: j.session_uuid };
    },
  };
}

/** A new admin session made with the CLI in an instance's data folder (replicated through Redis). */
export function newAdminSession(d: HubDir): { token: string; session_uuid: string } {
  const r = moonhubCli([
    'session',
    'create',
    '--admin',
    '--config',
    `${d.root}/moonhub.yaml`,
    '--data',
    d.data,
  ]);
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout) as { token: string; session_uuid: string };
}

function adminTokenOf(d: HubDir): string {
  return newAdminSession(d).token;
}

/** Waits until every hub accepts the token (Redis pub/sub replicates it in milliseconds). */
async function replicated(hubs: MoonhubProcess[], token: string): Promise<void> {
  for (const hub of hubs) {
    for (let i = 0; ; i++) {
      let r;
      try {
        r = await rawRequest(hub.url, { method: 'POST', token, body: call('ping') });
      } catch (err) {
        // A hub a test just SIGKILLed refuses connections before its exit is reported.
        if ((err as NodeJS.ErrnoException).code === 'ECONNREFUSED') break;
        throw err;
      }
      await r.done;
      // An unknown token is refused with 403 (auth/authenticate), 401 without one.
      if (r.status !== 401 && r.status !== 403) break;
      assert.ok(i < 200, 'the token never reached every instance');
      await sleep(10);
    }
  }
}

export interface WorkersHub {
  dir: HubDir;
  /** The config file's path. */
  cfg: string;
  hub: MoonhubProcess;
  /** A new session token made with the CLI in the shared data folder. */
  newToken(agent?: string): string;
}

/** One `serve --workers N` hub (the config says how many), once `workers` of them are ready. */
export async function startWorkersHub(opts: {
  plugins: Record<string, string>;
  config: string;
  workers?: number;
}): Promise<WorkersHub> {
  const dir = makeHubDir(opts.plugins);
  const cfg = dir.write('moonhub.yaml', opts.config);
  const hub = await startMoonhub(['--config', cfg, '--data', dir.data]);
  const want = opts.workers ?? 2;
  for (let i = 0; (hub.log().match(/worker \d+ \(pid \d+, instance/g) ?? []).length < want; i++) {
    if (i >= 300) {
      await hub.stop();
      assert.fail(`${want} workers not ready:\n${hub.log()}`);
    }
    await sleep(100);
  }
  return {
    dir,
    cfg,
    hub,
    newToken: (agent = 'worker') =>
      createSession(['--config', cfg, '--data', dir.data, '--agent', agent]).token,
  };
}

/**
 * The probe plugin the 2025-session cluster and workers tests share: an echo, logs at two levels,
 * a resource update, an elicitation, and a slow call that logs steps (for stream resumption).
 */
export const PROBE_PLUGIN = `
mcp.tool("probe.echo", { description = "echo" }, function() return "echoed" end)
mcp.tool("probe.log", { description = "logs twice" }, function(params, context)
  context.log("info", "info-line")
  context.log("warning", "warning-line")
  return "logged"
end)
mcp.tool("probe.touch", { description = "tells subscribers the resource changed" }, function()
  mcp.resource_updated("probe://watched")
  return "touched"
end)
mcp.resource("probe://watched", { name = "watched" }, function() return "w" end)
mcp.tool("probe.ask", { description = "asks a name" }, function(params, context)
  local a = context.elicit{ message = "name?",
    requested_schema = { type = "object", properties = { name = { type = "string" } } } }
  return "hello " .. tostring(a.content and a.content.name)
end)
mcp.tool("probe.slow", { description = "logs, waits, logs, answers", timeout_ms = 70000 }, function(params, context)
  for i = 1, 3 do context.log("warning", "step-" .. i); task.sleep(50) end
  task.sleep(params.wait or 1500)
  for i = 4, 5 do context.log("warning", "step-" .. i) end
  return "slow done"
end)
`;

/** A tool that keeps its thread busy `seconds` (default 0.4): with `isolation: none`, the hub's. */
export const SPIN_PLUGIN = `
mcp.tool("spin.main", { description = "keeps the thread busy" }, function(params)
  local t = os.clock()
  while os.clock() - t < (params.seconds or 0.4) do end
  return "spun"
end)
`;

/**
 * The config of an instance whose plugins run on the hub's thread (`isolation: none`), so a
 * SPIN_PLUGIN call keeps the instance from reading anything until it ends.
 */
export const busyInstanceConfig = (hubId: string) => (redis: string) => `
hub_id: ${hubId}
auth: { mode: token }
plugins: { dirs: [plugins], isolation: none }
agents: { worker: {} }
cluster: { redis: "${redis}" }
`;

export interface ProbeAnswer {
  instance: string;
  status: number;
  body: { result?: Record<string, unknown>; error?: { code: number; message: string } };
}

/** One 2026-07-28 call of PROBE_PLUGIN's probe.ask (elicitation capable), with `extra` params. */
export async function askProbe(
  url: string,
  token: string | undefined,
  extra: Record<string, unknown> = {},
): Promise<ProbeAnswer> {
  const modern = '2026-07-28';
  const res = await rawRequest(url, {
    method: 'POST',
    token,
    headers: {
      'MCP-Protocol-Version': modern,
      'Mcp-Method': 'tools/call',
      'Mcp-Name': 'probe.ask',
    },
    body: {
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: {
        name: 'probe.ask',
        arguments: {},
        _meta: {
          'io.modelcontextprotocol/protocolVersion': modern,
          'io.modelcontextprotocol/clientCapabilities': { elicitation: {} },
        },
        ...extra,
      },
    },
  });
  const text = await res.done;
  return {
    instance: res.instance,
    status: res.status,
    body: JSON.parse(text) as ProbeAnswer['body'],
  };
}
