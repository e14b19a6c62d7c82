/**
 * The `moonhub` command: `serve` (MCP over HTTP or stdio) and `run` (a Lua script against the
 * loaded plugins). Logs go to stderr; stdout carries only MCP (stdio) or a script's result.
 */
import { Command, InvalidArgumentError, Option } from 'commander';
import { resolve } from 'node:path';
import { createLogger } from '../log.js';
import { startHub } from '../hub.js';
import { startHttpServer, serveStdio } from '../server/index.js';
import { packageVersion } from '../server/protocol.js';
import { loadConfig, type HubConfig } from '../config/config.js';
import { runScript } from './run-script.js';
import { toJsonText } from '../registry/results.js';

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '::1', '[::1]']);

function port(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65535)
    throw new InvalidArgumentError('a port is an integer from 0 to 65535');
  return n;
}

function positive(value: string): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0) throw new InvalidArgumentError('a positive number is needed');
  return n;
}

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

interface ServeFlags {
  plugins: string[];
  port?: number;
  host?: string;
  stdio?: boolean;
  config?: string;
  watch: boolean;
  logLevel?: string;
  hubId?: string;
}

/** Command-line flags override the config file; `--plugins` adds to its directories. */
function settings(flags: {
  plugins: string[];
  config?: string;
  port?: number;
  host?: string;
  hubId?: string;
}): Required<Pick<HubConfig, 'hub_id'>> & { dirs: string[]; host: string; port: number } {
  const config = flags.config ? loadConfig(flags.config) : {};
  const dirs = [...(config.plugins?.dirs ?? []), ...flags.plugins].map((d) => resolve(d));
  return {
    hub_id: flags.hubId ?? config.hub_id ?? 'moonhub',
    dirs,
    host: flags.host ?? config.listen?.host ?? '127.0.0.1',
    port: flags.port ?? config.listen?.port ?? 8848,
  };
}

async function serve(flags: ServeFlags): Promise<void> {
  const logger = createLogger(flags.logLevel);
  const s = settings(flags);
  if (s.dirs.length === 0)
    throw new Error(
      'no plugins directory: pass --plugins DIR or set plugins.dirs in the config file',
    );
  const hub = await startHub({ hubId: s.hub_id, pluginDirs: s.dirs, logger, watch: flags.watch });
  const onError = (err: unknown) => logger.error({ err }, 'internal error while serving a request');

  if (flags.stdio) {
    const server = serveStdio(hub.registry, {
      input: process.stdin,
      output: process.stdout,
      onError,
    });
    process.stderr.write(`moonhub: serving MCP on stdio (${hub.registry.countTools()} tools)\n`);
    await server.closed;
    await hub.stop();
    return;
  }

  if (!LOOPBACK.has(s.host)) {
    logger.warn(
      { host: s.host },
      'WARNING: listening on a non-loopback address without authentication; anyone who can reach it can call every tool',
    );
  }
  // A hub bound to a named address must accept that name in Host (DNS-rebinding check).
  const allowedHosts = LOOPBACK.has(s.host) ? [] : [s.host];
  const http = await startHttpServer(hub.registry, {
    host: s.host,
    port: s.port,
    onError,
    allowedHosts,
  });
  process.stderr.write(
    `moonhub: serving MCP at ${http.url} (${hub.registry.countTools()} tools)\n`,
  );
  await new Promise<void>((done) => {
    const stop = () => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      void Promise.allSettled([http.close(), hub.stop()]).then(() => done());
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
}

interface RunFlags {
  plugins: string[];
  root?: string;
  timeout: number;
  config?: string;
  logLevel?: string;
}

async function run(file: string, flags: RunFlags): Promise<void> {
  const logger = createLogger(flags.logLevel ?? 'warn');
  const s = settings(flags);
  const hub = await startHub({
    hubId: s.hub_id,
    pluginDirs: s.dirs,
    logger,
    watch: false,
    execute: false,
  });
  try {
    const value = await runScript(hub, {
      file: resolve(file),
      root: flags.root ?? process.cwd(),
      timeoutMs: flags.timeout,
      logger,
      print: (text) => process.stderr.write(`${text}\n`),
    });
    process.stdout.write(`${toJsonText(value ?? null)}\n`);
  } finally {
    await hub.stop();
  }
}

export function buildProgram(): Command {
  const program = new Command('moonhub')
    .description('A Lua-scriptable MCP hub: Lua plugins register MCP tools, prompts and resources.')
    .version(packageVersion(), '-v, --version')
    .showHelpAfterError();

  program
    .command('serve')
    .description('serve the plugins over MCP (Streamable HTTP on /mcp, or stdio)')
    .option('-p, --plugins <dir>', 'a plugins directory (repeatable)', collect, [])
    .addOption(new Option('--port <n>', 'HTTP port (default 8848)').argParser(port))
    .option('--host <host>', 'interface to bind (default 127.0.0.1)')
    .option('--stdio', 'serve one client on stdin/stdout instead of HTTP')
    .option('-c, --config <file>', 'config file (JSON or YAML)')
    .option('--hub-id <id>', "this hub's id, shown to handlers as context.hub_id")
    .option('--no-watch', 'do not reload plugins when their files change')
    .option('--log-level <level>', 'trace, debug, info, warn, error (default info)')
    .action((flags: ServeFlags) => serve(flags));

  program
    .command('run')
    .description('run a Lua script against the loaded plugins and print its return value as JSON')
    .argument('<file>', 'the Lua script')
    .option('-p, --plugins <dir>', 'a plugins directory (repeatable)', collect, [])
    .option(
      '--root <dir>',
      'workspace root: require() finds modules here (default: current directory)',
    )
    .addOption(
      new Option('--timeout <ms>', 'time limit of the script').default(30_000).argParser(positive),
    )
    .option('-c, --config <file>', 'config file (JSON or YAML)')
    .option('--log-level <level>', 'log level on stderr (default warn)')
    .action((file: string, flags: RunFlags) => run(file, flags));

  return program;
}

export async function main(argv: string[]): Promise<void> {
  await buildProgram().parseAsync(argv);
}
