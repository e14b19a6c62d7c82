/**
 * `moonhub new hub DIR` and `moonhub new plugin NAME`: a hub folder that serves as is (config,
 * plugins folder with one plugin, `.luarc.json` for the Lua language server, a README), and a
 * plugin with one tool, one prompt and one resource. Nothing existing is overwritten.
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The LuaLS definitions shipped in the package (types/ at its root). */
export const TYPES_DIR = resolve(dirname(fileURLToPath(import.meta.url)), '../../..', 'types');

const PLUGIN_NAME = /^[A-Za-z][A-Za-z0-9_-]{0,63}$/;

export function pluginSource(name: string): string {
  return `-- ${name}: one tool, one prompt and one resource. Edit and save: \`moonhub dev\` reloads it.
-- The Lua API: docs/lua-api.md in the moonhub package; your editor completes it (.luarc.json).

mcp.tool("${name}_hello", {
  description = "Greet someone by name",
  input_schema = {
    type = "object",
    properties = { name = { type = "string", description = "Who to greet" } },
    required = { "name" },
  },
}, function(params, context)
  -- secrets.get reads plugins.settings.${name}.<key> from the config (\${ENV_VAR} allowed there).
  local greeting = secrets.get("greeting") or "Hello"
  return { greeting = greeting .. ", " .. params.name .. "!", agent = context.agent_name }
end)

mcp.prompt("${name}_explain", {
  description = "Ask for a short explanation of a topic",
  arguments = { { name = "topic", description = "What to explain", required = true } },
}, function(args)
  return "Explain " .. args.topic .. " in three sentences."
end)

mcp.resource("${name}://about", {
  name = "About ${name}",
  description = "What this plugin offers",
  mime_type = "text/markdown",
}, function()
  return "# ${name}\\n\\nTools: \`${name}_hello\`. Prompts: \`${name}_explain\`.\\n"
end)
`;
}

function write(file: string, text: string, made: string[]): void {
  if (existsSync(file)) throw new Error(`${file} already exists; nothing was overwritten`);
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, text);
  made.push(file);
}

export function luarc(typesDir = TYPES_DIR): string {
  return `${JSON.stringify(
    {
      $schema: 'https://raw.githubusercontent.com/LuaLS/vscode-lua/master/setting/schema.json',
      'runtime.version': 'Lua 5.4',
      'workspace.library': [typesDir],
      'workspace.checkThirdParty': false,
      'diagnostics.disable': ['lowercase-global'],
    },
    null,
    2,
  )}\n`;
}

const HUB_CONFIG = `# yaml-language-server: $schema=https://moonhub.dev/schemas/config.schema.json
# moonhub's config: every key is in the moonhub package's schemas/config.schema.json.
plugins:
  dirs: [plugins]
  settings:
    hello:
      greeting: Hello # a secret would be \${SOME_ENV_VAR}: never written here, never shown
# upstreams:            # other MCP servers, in the mcpServers shape (moonhub import mcp.json)
#   everything: { command: npx, args: [-y, "@modelcontextprotocol/server-everything"] }
`;

function hubReadme(name: string): string {
  return `# ${name}

A [moonhub](https://www.npmjs.com/package/moonhub) hub: Lua plugins in \`plugins/\`, config in
\`moonhub.yaml\`.

\`\`\`sh
moonhub dev                                  # serve with reload; prints how to connect clients
moonhub list                                 # what the plugins offer
moonhub call hello_hello --args '{"name":"Ada"}'
moonhub new plugin weather                   # another plugin in plugins/
moonhub import ~/.cursor/mcp.json            # add a client's MCP servers as upstreams
\`\`\`

\`.luarc.json\` points the Lua language server (VS Code's "Lua" extension, Neovim's lua_ls) at
moonhub's API definitions, so \`mcp.tool\`, \`context\` and \`secrets\` complete and check.
`;
}

/** `moonhub new hub DIR`: the files made. */
export function newHub(dir: string): string[] {
  const root = resolve(dir);
  if (existsSync(join(root, 'moonhub.yaml')))
    throw new Error(`${join(root, 'moonhub.yaml')} already exists; nothing was overwritten`);
  const made: string[] = [];
  write(join(root, 'moonhub.yaml'), HUB_CONFIG, made);
  write(join(root, 'plugins', 'hello.lua'), pluginSource('hello'), made);
  write(join(root, '.luarc.json'), luarc(), made);
  write(join(root, 'README.md'), hubReadme(basename(root)), made);
  write(join(root, '.gitignore'), '.moonhub/\n', made);
  return made;
}

/** `moonhub new plugin NAME`: in DIR, or ./plugins when it exists, or here. */
export function newPlugin(name: string, dir?: string): string {
  if (!PLUGIN_NAME.test(name))
    throw new Error(
      `'${name}' is not a plugin name: a letter, then letters, digits, _ or -, at most 64`,
    );
  const where = resolve(dir ?? (existsSync('plugins') ? 'plugins' : '.'));
  const file = join(where, `${name}.lua`);
  if (existsSync(join(where, name)))
    throw new Error(`${join(where, name)} already exists; nothing was overwritten`);
  const made: string[] = [];
  write(file, pluginSource(name), made);
  return relative(process.cwd(), file) || file;
}
