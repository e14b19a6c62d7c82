// Drives one third-party JavaScript MCP client against a hub, for test/clients/: the official
// SDK v1 client (`sdk1`) or the Vercel AI SDK's MCP client (`ai`), both installed by
// scripts/clients-env.sh under .cache/clients/js (not dependencies of the hub).
// Usage: node js-clients.mjs sdk1|ai http|stdio URL TOKEN OPS_JSON
//   OPS_JSON: [{"tool": name, "args": {...}} | {"resource": uri}, ...]
// Prints a JSON array with one {ok, text} or {error} per op; a failed connect prints {connect}.
import { createRequire } from 'node:module';
import { join, dirname } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const [kind, transport, url, token, opsJson] = process.argv.slice(2);
const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const cache = process.env.MOONHUB_CLIENTS ?? join(root, '.cache', 'clients');
const require = createRequire(join(cache, 'js', 'package.json'));
const load = (name) => import(pathToFileURL(require.resolve(name)).href);
const bin = join(root, 'bin', 'moonhub.js');
const ops = JSON.parse(opsJson);
const headers = token ? { Authorization: `Bearer ${token}` } : {};
const stdioEnv = { ...process.env, MOONHUB_TOKEN: token ?? '' };

const text = (r) =>
  (r.content ?? r.contents ?? []).map((c) => c.text ?? '').join('\n') ||
  JSON.stringify(r.structuredContent ?? r);

async function sdk1() {
  const { Client } = await load('@modelcontextprotocol/sdk/client/index.js');
  const client = new Client({ name: 'sdk1-test', version: '1.0.0' });
  if (transport === 'http') {
    const { StreamableHTTPClientTransport } = await load(
      '@modelcontextprotocol/sdk/client/streamableHttp.js',
    );
    await client.connect(
      new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }),
    );
  } else {
    const { StdioClientTransport } = await load('@modelcontextprotocol/sdk/client/stdio.js');
    await client.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: [bin, 'connect', url],
        env: stdioEnv,
      }),
    );
  }
  return {
    call: (name, args) => client.callTool({ name, arguments: args }),
    read: (uri) => client.readResource({ uri }),
    close: () => client.close(),
  };
}

async function ai() {
  const { createMCPClient } = await load('@ai-sdk/mcp');
  let spec;
  if (transport === 'http') spec = { type: 'http', url, headers };
  else {
    const { Experimental_StdioMCPTransport } = await load('@ai-sdk/mcp/mcp-stdio');
    spec = new Experimental_StdioMCPTransport({
      command: process.execPath,
      args: [bin, 'connect', url],
      env: stdioEnv,
    });
  }
  const client = await createMCPClient({ transport: spec });
  const tools = await client.tools();
  return {
    call: async (name, args) => {
      if (!tools[name]) throw new Error(`the AI SDK lists no tool named ${name}`);
      return tools[name].execute(args, { toolCallId: 'call-1', messages: [] });
    },
    read: (uri) => client.readResource({ uri }),
    close: () => client.close(),
  };
}

const out = [];
let client;
try {
  client = kind === 'sdk1' ? await sdk1() : await ai();
} catch (err) {
  process.stdout.write(JSON.stringify({ connect: String(err?.message ?? err) }));
  process.exit(0);
}
for (const op of ops) {
  try {
    const r = op.tool ? await client.call(op.tool, op.args ?? {}) : await client.read(op.resource);
    out.push({ ok: r.isError !== true, text: text(r) });
  } catch (err) {
    out.push({ error: String(err?.message ?? err) });
  }
}
await client.close().catch(() => {});
process.stdout.write(JSON.stringify(out));
process.exit(0);
