/**
 * Helpers for the authentication and scoping tests: a scratch hub folder (plugins, config,
 * manifests, data folder), `moonhub session` run as a real CLI, and SDK clients that present a
 * bearer token, pinned to one protocol era.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before } from 'node:test';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { BIN, startMoonhub, type MoonhubProcess } from './moonhub-process.js';
import type { ClientEvents, Era } from './mcp-client.js';

/** One Lua plugin per name: a tool `<p>.echo`, a prompt `<p>-prompt`, a resource `<p>://info`. */
export function scopedPlugin(name: string): string {
  return `
mcp.tool("${name}.echo", { description = "echo from ${name}" }, function(params, context)
  return { plugin = "${name}", session_uuid = context.session_uuid, agent_name = context.agent_name,
           target = context.target, principal = context.principal, hub_id = context.hub_id }
end)
mcp.prompt("${name}-prompt", { description = "prompt of ${name}" }, function() return "hi from ${name}" end)
mcp.resource("${name}://info", { name = "${name} info" }, function() return "info of ${name}" end)
mcp.resource("${name}://item/{id}", { name = "${name} item" }, function(p) return "item " .. p.id end)
`;
}

/** A plugin that reports what a session sees through mcp.list_tools(session_uuid). */
export const LISTER_PLUGIN = `
mcp.tool("lister.of", {
  input_schema = { type = "object", properties = { session = { type = "string" } } },
}, function(params, context)
  local list, err = mcp.list_tools(params.session or context.session_uuid)
  if list == nil then return { error = err } end
  local names = {}
  for i, t in ipairs(list) do names[i] = t.name end
  table.sort(names)
  return { names = names }
end)
mcp.tool("lister.relay", {
  input_schema = { type = "object", properties = { name = { type = "string" } }, required = { "name" } },
}, function(params, context)
  local content, err = mcp.call_tool(params.name, {}, context)
  if content == nil then return { error = err } end
  return { text = content[1].text }
end)
`;

export interface HubDir {
  root: string;
  plugins: string;
  data: string;
  /** Writes a file under root and returns its path. */
  write: (name: string, text: string) => string;
}

export function makeHubDir(plugins: Record<string, string>): HubDir {
  const root = mkdtempSync(join(tmpdir(), 'moonhub-auth-'));
  const pluginsDir = join(root, 'plugins');
  mkdirSync(pluginsDir);
  for (const [name, code] of Object.entries(plugins))
    writeFileSync(join(pluginsDir, `${name}.lua`), code);
  const write = (name: string, text: string) => {
    const file = join(root, name);
    writeFileSync(file, text);
    return file;
  };
  return { root, plugins: pluginsDir, data: join(root, 'data'), write };
}

export interface CliResult {
  status: number | null;
  stdout: string;
  stderr: string;
}

export function moonhubCli(args: string[]): CliResult {
  const r = spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8', timeout: 30_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

export interface Issued {
  session_uuid: string;
  token: string;
  url: string;
  mcp_config: {
    http: { url: string; headers: { Authorization: string } };
    stdio: { command: string; args: string[]; env: Record<string, string> };
    stdio_standalone: { command: string; args: string[] };
  };
}

export function createSession(args: string[]): Issued {
  const r = moonhubCli(['session', 'create', ...args]);
  if (r.status !== 0) throw new Error(`session create failed: ${r.stderr}`);
  return JSON.parse(r.stdout) as Issued;
}

/** Issues session tokens for the agents of a hub's config file (`moonhub session create`). */
export function sessionIssuer(
  config: string,
  data: string,
  url: string,
): (agent: string) => Issued {
  return (agent) =>
    createSession(['--config', config, '--data', data, '--agent', agent, '--url', url]);
}

export interface TwoAgentHub {
  hub: MoonhubProcess;
  dir: HubDir;
  A: Issued;
  B: Issued;
  /** An admin token (for /metrics). */
  admin: string;
}

/**
 * A token-auth hub whose two agents, A and B, both see every plugin of `plugins` (name -> Lua),
 * with `extra` config lines and the `plugins:` setting given, a session token for each agent
 * and an admin token: the setup of the tests where one principal's load must not touch another.
 */
export async function startTwoAgentHub(
  plugins: Record<string, string>,
  extra = '',
  pluginsConfig = '{ dirs: [plugins] }',
): Promise<TwoAgentHub> {
  const { hub, dir, tokens, admin } = await startAgentHub(
    plugins,
    ['A', 'B'],
    extra,
    pluginsConfig,
  );
  return { hub, dir, A: tokens.A!, B: tokens.B!, admin };
}

/** `startTwoAgentHub` with any agents: each sees every plugin and gets a session token. */
export async function startAgentHub(
  plugins: Record<string, string>,
  agents: string[],
  extra = '',
  pluginsConfig = '{ dirs: [plugins] }',
): Promise<{ hub: MoonhubProcess; dir: HubDir; tokens: Record<string, Issued>; admin: string }> {
  const dir = makeHubDir(plugins);
  const names = Object.keys(plugins).join(', ');
  const file = dir.write(
    'moonhub.yaml',
    `auth: { mode: token }
plugins: ${pluginsConfig}
agents:
${agents.map((a) => `  ${a}: { plugins: [${names}] }`).join('\n')}
${extra}`,
  );
  // The admin token from the CLI (before the hub opens the data folder); A's and B's sessions
  // from the hub's admin API with it, which does what `session create` does without two more
  // CLI processes (a second or more each on a loaded machine).
  const created = moonhubCli(['session', 'create', '--admin', '--data', dir.data]);
  if (created.status !== 0) throw new Error(`session create --admin failed: ${created.stderr}`);
  const admin = (JSON.parse(created.stdout) as { token: string }).token;
  const hub = await startMoonhub(['--config', file, '--data', dir.data, '--no-watch']);
  try {
    const tokens: Record<string, Issued> = {};
    for (const agent of agents) tokens[agent] = await issueOverAdminApi(hub.url, admin, agent);
    return { hub, dir, tokens, admin };
  } catch (err) {
    await hub.stop();
    throw err;
  }
}

/**
 * A hub without authentication on `plugins`, started before the enclosing `describe`'s tests
 * and stopped after them; read `.hub` and `.dir` inside the tests.
 */
export function plainHubFor(plugins: Record<string, string>): { hub: MoonhubProcess; dir: HubDir } {
  const made = {} as { hub: MoonhubProcess; dir: HubDir };
  before(async () => {
    made.dir = makeHubDir(plugins);
    made.hub = await startMoonhub([
      '--plugins',
      made.dir.plugins,
      '--data',
      made.dir.data,
      '--no-watch',
    ]);
  });
  after(async () => made.hub?.stop());
  return made;
}

/** A session for `agent` from the hub's admin API (POST /admin/sessions), as the CLI prints it. */
export async function issueOverAdminApi(
  url: string,
  admin: string,
  agent: string,
): Promise<Issued> {
  const res = await fetch(new URL('/admin/sessions', url), {
    method: 'POST',
    headers: { Authorization: `Bearer ${admin}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ agent }),
  });
  const body = await res.text();
  if (res.status !== 201) throw new Error(`POST /admin/sessions: ${res.status} ${body}`);
  return JSON.parse(body) as Issued;
}

/** An SDK client presenting `token` (if any), with counters of list_changed notifications. */
export async function connectWithToken(
  url: string,
  era: Era,
  token: string | undefined,
  /** Client capabilities to declare (elicitation, sampling, roots). */
  capabilities: Record<string, object> = {},
): Promise<{ client: Client; events: ClientEvents }> {
  const events: ClientEvents = { tools: 0, prompts: 0, resources: 0 };
  const onChanged = (kind: keyof ClientEvents) => () => {
    events[kind]++;
  };
  const client = new Client(
    { name: 'moonhub-auth-test', version: '1.0.0' },
    {
      capabilities,
      versionNegotiation: { mode: era === 'modern' ? { pin: '2026-07-28' } : 'legacy' },
      listChanged: {
        tools: { onChanged: onChanged('tools'), autoRefresh: false, debounceMs: 0 },
        prompts: { onChanged: onChanged('prompts'), autoRefresh: false, debounceMs: 0 },
        resources: { onChanged: onChanged('resources'), autoRefresh: false, debounceMs: 0 },
      },
    },
  );
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    authProvider: { token: async () => token },
  });
  await client.connect(transport);
  return { client, events };
}

/** A raw MCP POST (2026-07-28 envelope unless `legacy` headers are given). */
/**
 * fetch, tried once more when a pooled keep-alive socket turned out to be closed by the hub
 * (undici's "other side closed" before any answer): the request never reached a handler, so
 * sending it again is what a client would do. Any other failure is the test's to see.
 */
async function fetchRetryingStaleSocket(url: string, init: RequestInit): Promise<Response> {
  try {
    return await fetch(url, init);
  } catch (err) {
    const cause = (err as { cause?: { code?: string } }).cause;
    if (cause?.code !== 'UND_ERR_SOCKET' && cause?.code !== 'ECONNRESET') throw err;
    return fetch(url, init);
  }
}

export async function rawPost(
  url: string,
  body: Record<string, unknown>,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: Headers; text: string }> {
  const params = (body.params ?? {}) as Record<string, unknown>;
  const modern = !('mcp-session-id' in headers) && body.method !== 'initialize';
  // The CLI helpers block the event loop (spawnSync); a keep-alive socket the hub closed
  // meanwhile (5 s idle) is only noticed once the loop polls again, so let it poll first rather
  // than reuse a dead socket ("fetch failed" on a loaded machine).
  await new Promise((r) => setImmediate(r));
  const res = await fetchRetryingStaleSocket(url, {
    method: 'POST',
    headers: {
      'Content-Type': 'application/json',
      Accept: 'application/json, text/event-stream',
      ...(modern
        ? {
            'MCP-Protocol-Version': '2026-07-28',
            'Mcp-Method': String(body.method),
            ...(typeof params.name === 'string' ? { 'Mcp-Name': params.name } : {}),
            ...(typeof params.uri === 'string' ? { 'Mcp-Name': params.uri } : {}),
          }
        : {}),
      ...headers,
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      ...body,
      params: modern
        ? {
            ...params,
            _meta: {
              'io.modelcontextprotocol/protocolVersion': '2026-07-28',
              'io.modelcontextprotocol/clientCapabilities': {},
            },
          }
        : params,
    }),
  });
  return { status: res.status, headers: res.headers, text: await res.text() };
}
