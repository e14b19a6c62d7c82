/**
 * The plugin author's commands: `new hub|plugin`, `list` and `call` (the plugins without a
 * client, for quick checks and shell scripts), and `import` (a client's MCP servers into the
 * config). In a folder made by `moonhub new hub`, they find moonhub.yaml by themselves.
 */
import { existsSync } from 'node:fs';
import type { Command } from 'commander';
import type { Hub } from '../hub.js';
import type { RegistryError } from '../registry/errors.js';
import { newHub, newPlugin } from './scaffold.js';

export interface ProjectFlags {
  plugins: string[];
  config?: string;
  logLevel?: string;
}

/** With neither --config nor --plugins: ./moonhub.yaml, else ./plugins. */
export function projectDefaults<F extends ProjectFlags>(flags: F): F {
  if (flags.config !== undefined || flags.plugins.length > 0) return flags;
  for (const file of ['moonhub.yaml', 'moonhub.yml', 'moonhub.json'])
    if (existsSync(file)) return { ...flags, config: file };
  if (existsSync('plugins')) return { ...flags, plugins: ['plugins'] };
  return flags;
}

async function withHub<T>(given: ProjectFlags, fn: (hub: Hub) => Promise<T>): Promise<T> {
  const flags = projectDefaults(given);
  // Loaded by the commands that start a hub (main.ts says why).
  const [{ createLogger }, { resolveSettings }, { startHub }] = await Promise.all([
    import('../log.js'),
    import('../config/settings.js'),
    import('../hub.js'),
  ]);
  const logger = createLogger(flags.logLevel ?? 'warn');
  const s = resolveSettings(flags);
  if (s.dirs.length === 0 && s.config.upstreams === undefined)
    throw new Error(
      'nothing to load: pass --plugins DIR or --config FILE (or run in a hub folder)',
    );
  const hub = await startHub({
    hubId: s.hub_id,
    pluginDirs: s.dirs,
    logger,
    watch: false,
    execute: s.execute,
    pluginSettings: s.config.plugins?.settings,
    upstreams: s.config.upstreams,
  });
  try {
    await hub.upstreamsReady;
    for (const p of hub.plugins.status())
      if (p.error) process.stderr.write(`moonhub: plugin ${p.name}: ${p.error.message}\n`);
    return await fn(hub);
  } finally {
    await hub.stop();
  }
}

function out(value: unknown): void {
  process.stdout.write(`${typeof value === 'string' ? value : JSON.stringify(value, null, 2)}\n`);
}

async function list(flags: ProjectFlags & { json?: boolean }): Promise<void> {
  await withHub(flags, async (hub) => {
    const r = hub.registry;
    const all = {
      tools: r.listTools(),
      prompts: r.listPrompts(),
      resources: r.listResources(),
      resource_templates: r.listResourceTemplates(),
    };
    if (flags.json) return out(all);
    const lines: string[] = [];
    const section = (title: string, rows: [string, string | undefined][]) => {
      if (rows.length === 0) return;
      lines.push(`${title}:`);
      const width = Math.max(...rows.map(([n]) => n.length));
      for (const [n, d] of rows) {
        // The first line of a description, cut to fit a terminal.
        const first = (d ?? '').split('\n')[0]!;
        const text = first.length > 100 ? `${first.slice(0, 99)}…` : first;
        lines.push(`  ${n.padEnd(width)}  ${text}`.trimEnd());
      }
    };
    section(
      'tools',
      all.tools.map((t) => [t.name, t.description]),
    );
    section(
      'prompts',
      all.prompts.map((p) => [p.name, p.description]),
    );
    section(
      'resources',
      all.resources.map((x) => [x.uri, x.description ?? x.name]),
    );
    section(
      'resource templates',
      all.resource_templates.map((x) => [x.uriTemplate, x.description ?? x.name]),
    );
    out(lines.join('\n'));
  });
}

function parseArgs(text: string | undefined): Record<string, unknown> | undefined {
  if (text === undefined) return undefined;
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (err) {
    throw new Error(`--args is not JSON: ${(err as Error).message}`);
  }
  if (v === null || typeof v !== 'object' || Array.isArray(v))
    throw new Error('--args must be a JSON object, e.g. --args \'{"name":"Ada"}\'');
  return v as Record<string, unknown>;
}

/** A tool's result for a shell: structured content as JSON, else the text items. */
function shown(result: {
  content: { type: string; text?: string }[];
  structuredContent?: unknown;
}): unknown {
  if (result.structuredContent !== undefined) return result.structuredContent;
  const texts = result.content.filter((c) => c.type === 'text').map((c) => c.text ?? '');
  return texts.length === result.content.length ? texts.join('\n') : result.content;
}

async function call(
  name: string,
  flags: ProjectFlags & { args?: string; json?: boolean },
): Promise<void> {
  const args = parseArgs(flags.args);
  await withHub(flags, async (hub) => {
    const r = hub.registry;
    const ctx = { hub_id: r.hubId };
    if (r.getTool(name) !== undefined) {
      const result = await r.callTool(name, args, ctx);
      if (result.isError) {
        process.stderr.write(`moonhub: ${name} failed: ${String(shown(result))}\n`);
        process.exitCode = 1;
        if (!flags.json) return;
      }
      return out(flags.json ? result : shown(result));
    }
    if (r.getPromptEntry(name) !== undefined) {
      const strings = Object.fromEntries(
        Object.entries(args ?? {}).map(([k, v]) => [
          k,
          typeof v === 'string' ? v : JSON.stringify(v),
        ]),
      );
      return out(await r.getPrompt(name, strings, ctx));
    }
    if (name.includes(':')) {
      try {
        return out(await r.readResource(name, { ...ctx, uri: name }));
      } catch (err) {
        if ((err as RegistryError).code !== 'unknown_resource') throw err;
      }
    }
    throw new Error(
      `no tool, prompt or resource '${name}' (moonhub list shows what the plugins offer)`,
    );
  });
}

export function addAuthorCommands(
  program: Command,
  collect: (v: string, p: string[]) => string[],
): void {
  const project = (cmd: Command): Command =>
    cmd
      .option('-p, --plugins <dir>', 'a plugins directory (repeatable)', collect, [])
      .option('-c, --config <file>', 'config file (default ./moonhub.yaml when present)')
      .option('--log-level <level>', 'log level on stderr (default warn)');

  const make = program.command('new').description('make a hub folder or a plugin');
  make
    .command('hub')
    .description('a hub folder: moonhub.yaml, plugins/hello.lua, .luarc.json, README.md')
    .argument('<dir>')
    .action((dir: string) => {
      for (const f of newHub(dir)) process.stderr.write(`created ${f}\n`);
      process.stderr.write(`next: cd ${dir} && moonhub dev\n`);
    });
  make
    .command('plugin')
    .description('a plugin with one tool, one prompt and one resource')
    .argument('<name>')
    .option('--dir <dir>', 'where (default ./plugins when it exists, else here)')
    .action((name: string, flags: { dir?: string }) => {
      process.stderr.write(`created ${newPlugin(name, flags.dir)}\n`);
    });

  project(
    program
      .command('list')
      .description("list the plugins' tools, prompts and resources (no client needed)")
      .option('--json', 'as JSON'),
  ).action((flags: ProjectFlags & { json?: boolean }) => list(flags));

  project(
    program
      .command('call')
      .description('call a tool (or get a prompt, or read a resource URI) and print the result')
      .argument('<name>', 'tool or prompt name, or resource URI')
      .option('--args <json>', 'the arguments, a JSON object')
      .option('--json', 'print the whole MCP result'),
  ).action((name: string, flags: ProjectFlags & { args?: string; json?: boolean }) =>
    call(name, flags),
  );

  program
    .command('import')
    .description("copy an MCP client's servers (mcpServers JSON) into the config's upstreams")
    .argument('<file>', 'e.g. .cursor/mcp.json, .vscode/mcp.json, claude_desktop_config.json')
    .option('-c, --config <file>', 'config file to add them to (default ./moonhub.yaml)')
    .option('--replace', 'replace upstreams of the same name (default: keep them)')
    .action(async (file: string, flags: { config?: string; replace?: boolean }) => {
      const { importServers } = await import('./import-servers.js');
      const into =
        flags.config ??
        ['moonhub.yaml', 'moonhub.yml', 'moonhub.json'].find((f) => existsSync(f)) ??
        'moonhub.yaml';
      const r = importServers(file, into, flags.replace === true);
      const say = (what: string, names: string[]) => {
        if (names.length > 0) process.stderr.write(`${what}: ${names.join(', ')}\n`);
      };
      say(`added to ${into}`, r.added);
      say('replaced', r.replaced);
      say('already there, kept (--replace to overwrite)', r.kept);
      for (const [name, keys] of Object.entries(r.dropped))
        process.stderr.write(`${name}: ignored ${keys.join(', ')}\n`);
    });
}
