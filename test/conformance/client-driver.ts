/**
 * Driver for the MCP conformance suite's client mode: the suite starts a test server and runs
 * `node dist/test/conformance/client-driver.js <server url>`. The driver makes a hub proxy that
 * server as an upstream (a plugin calling mcp.proxy) and then acts as the agent: it calls every
 * imported tool through the registry, answering the upstream's elicitation and sampling requests
 * through a CallPeer. Run with scripts/conformance-client.sh (needs Node 22 for the suite).
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger } from '../../src/log.js';
import { startHub } from '../../src/hub.js';
import type { CallPeer } from '../../src/registry/types.js';

const url = process.argv[process.argv.length - 1] ?? '';
const scenario = process.env.MCP_CONFORMANCE_SCENARIO ?? '';
/** Pre-registered credentials some auth scenarios hand the client. */
const context = JSON.parse(process.env.MCP_CONFORMANCE_CONTEXT ?? '{}') as Record<string, unknown>;

const agent: CallPeer = {
  clientCapabilities: { sampling: {}, elicitation: {} },
  progress: () => true,
  log: () => undefined,
  async request(method) {
    if (method === 'elicitation/create') return { action: 'accept', content: {} };
    if (method === 'sampling/createMessage')
      return { role: 'assistant', model: 'driver', content: { type: 'text', text: 'ok' } };
    if (method === 'roots/list') return { roots: [] };
    throw new Error(`the driver cannot answer ${method}`);
  },
};

/**
 * The proxy's `oauth` option as Lua source: the scenario's credentials, if it gave any, and the
 * grant an operator would configure for that kind of upstream (the scenario's name says which).
 */
function luaOauth(): string {
  const fields: string[] = [];
  const set = (key: string, value: unknown) => {
    if (typeof value === 'string') fields.push(`${key} = ${JSON.stringify(value)}`);
  };
  for (const key of ['client_id', 'client_secret', 'private_key_pem', 'signing_algorithm'])
    set(key, context[key]);
  if (scenario.includes('client-credentials')) fields.push('grant = "client_credentials"');
  if (scenario.startsWith('auth/wif-')) {
    fields.push('grant = "jwt_bearer"');
    set('assertion', context.valid_jwt);
  }
  if (typeof context.idp_id_token === 'string') {
    fields.push('grant = "cross_app_access"');
    set('idp_token_endpoint', context.idp_token_endpoint);
    set('idp_client_id', context.idp_client_id);
    set('id_token', context.idp_id_token);
  }
  if (scenario.startsWith('auth/dpop')) fields.push('dpop = true');
  if (!context.client_id)
    fields.push('client_metadata_url = "https://conformance-test.local/client-metadata.json"');
  return `{ ${fields.join(', ')} }`;
}

/** Arguments that satisfy a schema's required properties. */
function sample(schema: Record<string, unknown>): Record<string, unknown> {
  const props = (schema.properties ?? {}) as Record<string, { type?: string; default?: unknown }>;
  const out: Record<string, unknown> = {};
  for (const name of (schema.required as string[] | undefined) ?? []) {
    const p = props[name] ?? {};
    out[name] =
      p.default ??
      (p.type === 'number' || p.type === 'integer' ? 2 : p.type === 'boolean' ? true : 'x');
  }
  return out;
}

type Tool = { name: string; inputSchema: Record<string, unknown> };

/**
 * The calls the agent makes: the ones the scenario names (with its arguments), else every
 * imported tool with sample arguments. An echo tool taking a `schema` gets the input schema of
 * the other tool as the hub lists it, so the suite can see whether the hub kept it intact.
 */
function plannedCalls(tools: Tool[]): [string, Record<string, unknown>][] {
  const named = context.toolCalls as
    { name: string; arguments: Record<string, unknown> }[] | undefined;
  // A null argument is left out: the hub checks arguments against the tool's schema, where null
  // is no boolean; "not provided" is the other half of the same header check (SEP-2243).
  if (Array.isArray(named))
    return named.map((c) => [
      `up.${c.name}`,
      Object.fromEntries(Object.entries(c.arguments ?? {}).filter(([, v]) => v !== null)),
    ]);
  return tools.map((tool) => {
    const props = (tool.inputSchema.properties ?? {}) as Record<string, { type?: string }>;
    const other = tools.find((t) => t !== tool);
    if (props.schema?.type === 'object' && other) return [tool.name, { schema: other.inputSchema }];
    return [tool.name, sample(tool.inputSchema)];
  });
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'moonhub-conformance-'));
  writeFileSync(
    join(dir, 'conformance.lua'),
    `local ok, err = mcp.proxy(${JSON.stringify(url)}, { prefix = "up.", timeout_ms = 20000, oauth = ${luaOauth()} })\n` +
      `if not ok then error(err, 0) end\n`,
  );
  // Only what the scenarios exercise: no file watcher, no `execute` built-in (it would boot a
  // script worker ahead of a first run that never comes), and the plugin on the hub's thread
  // (isolation 'none'). The upstream layer under test is the same code either way: with workers,
  // `mcp.proxy` asks the hub's thread to connect (plugins/remote-upstreams.ts) and the proxied
  // tools are registered and called there (upstream/manager.ts, upstream/proxy.ts); the worker
  // would only run the proxy's Lua callbacks, which this plugin does not set. So each scenario
  // skips a plugin worker's boot and tests the same connections, OAuth grants and calls.
  const hub = await startHub({
    pluginDirs: [dir],
    logger: createLogger('warn'),
    watch: false,
    execute: false,
    isolation: 'none',
  });
  let failed = false;
  try {
    const status = hub.plugins.status()[0];
    if (!status?.loaded) throw new Error(`the proxy did not connect: ${status?.error?.message}`);
    const tools = hub.registry.listTools().filter((t) => t.name.startsWith('up.'));
    for (const [name, args] of plannedCalls(tools)) {
      const r = await hub.registry.callTool(name, args, { hub_id: 'conformance', peer: agent });
      process.stdout.write(`${scenario} ${name}: ${JSON.stringify(r)}\n`);
    }
  } catch (err) {
    failed = true;
    process.stderr.write(`${(err as Error).message}\n`);
  } finally {
    await hub.stop();
  }
  process.exit(failed ? 1 : 0);
}

void main();
