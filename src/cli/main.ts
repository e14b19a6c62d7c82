/**
 * The `moonhub` command: `serve` (MCP over HTTP or stdio; its start-up is in serve.ts), `dev` and
 * `run` (a Lua script against the loaded plugins), and the commands of the other cli/ modules.
 * Logs go to stderr; stdout carries only MCP (stdio) or a script's result.
 */
import { Command, InvalidArgumentError, Option } from 'commander';
import { resolve } from 'node:path';
import { checkLogFormat, checkLogLevel, type LogFormat } from '../log.js';
import { packageVersion } from '../server/protocol.js';
import { isAuthMode, type AuthMode } from '../config/auth-mode.js';
import { addSessionCommands } from './session-commands.js';
import { addConnectCommand } from './connect.js';
import { addAuthorCommands, projectDefaults } from './author-commands.js';
import type { ServeFlags } from './serve.js';

// The hub, its server and the config schema are loaded by the commands that run them, not at
// start: `moonhub connect` (what a stdio client spawns), `--help` and `--version` start in a
// fraction of the time (docs/performance.md, "Start-up").
const serveModule = () => import('./serve.js');

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

function logLevel(value: string): string {
  try {
    return checkLogLevel(value);
  } catch {
    throw new InvalidArgumentError('one of fatal, error, warn, info, debug, trace, silent');
  }
}

function logFormat(value: string): LogFormat {
  try {
    return checkLogFormat(value);
  } catch {
    throw new InvalidArgumentError('one of json, pretty, auto');
  }
}

function workerCount(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > 64)
    throw new InvalidArgumentError('an integer from 1 to 64');
  return n;
}

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

/** `--drain-ms`: an integer number of ms, 0 to 600000 (the config schema's range). */
function drainMillis(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 600_000)
    throw new InvalidArgumentError('an integer number of ms from 0 to 600000');
  return n;
}

function authMode(value: string): AuthMode {
  if (!isAuthMode(value)) throw new InvalidArgumentError('one of none, token, oauth');
  return value;
}

/** `moonhub dev`: serve with reloads, a human line per call, and the clients' set-up. */
async function dev(flags: ServeFlags): Promise<void> {
  const [
    { serve },
    { resolveSettings },
    { callLine, watchPlugins },
    { clientSetup, clientSetupText },
  ] = await Promise.all([
    serveModule(),
    import('../config/settings.js'),
    import('./dev-log.js'),
    import('../sessions/client-setup.js'),
  ]);
  const say = (text: string) => process.stderr.write(`${text}\n`);
  const settings = resolveSettings(projectDefaults(flags));
  return serve(
    { ...projectDefaults(flags), watch: true, logLevel: flags.logLevel ?? 'warn' },
    {
      onCall: (e) => say(callLine(e)),
      ready: (hub, url) => {
        watchPlugins(hub.plugins, say);
        if (url !== undefined)
          say(`\nConnect a client:\n${clientSetupText(clientSetup('moonhub', url))}\n`);
        if (url !== undefined && settings.authMode !== 'none')
          say(
            'This hub wants a token: `moonhub session create --agent NAME` prints these with it.',
          );
        say('Watching for changes; one line per call below. Ctrl-C stops.');
      },
    },
  );
}

interface RunFlags {
  plugins: string[];
  root?: string;
  timeout: number;
  config?: string;
  logLevel?: string;
}

async function run(file: string, args: string[], flags: RunFlags): Promise<void> {
  const [{ createLogger }, { resolveSettings }, { startHub }, { runScript }, { toJsonText }] =
    await Promise.all([
      import('../log.js'),
      import('../config/settings.js'),
      import('../hub.js'),
      import('./run-script.js'),
      import('../registry/results.js'),
    ]);
  const logger = createLogger(flags.logLevel ?? 'warn');
  const s = resolveSettings(flags);
  const hub = await startHub({
    hubId: s.hub_id,
    pluginDirs: s.dirs,
    logger,
    watch: false,
    execute: false,
    pluginSettings: s.config.plugins?.settings,
    upstreams: s.config.upstreams,
    isolation: s.isolation.mode,
    hardStopGraceMs: s.isolation.graceMs,
  });
  try {
    const value = await runScript(hub, {
      file: resolve(file),
      root: flags.root ?? process.cwd(),
      timeoutMs: flags.timeout,
      args,
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

  addServeCommand(program);
  addRunCommand(program);
  addDevCommand(program);
  addSessionCommands(program, collect);
  addConnectCommand(program);
  addAuthorCommands(program, collect);

  return program;
}

function addServeCommand(program: Command): void {
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
    .addOption(
      new Option(
        '--log-level <level>',
        'fatal, error, warn, info, debug, trace, silent (default info)',
      ).argParser(logLevel),
    )
    .addOption(
      new Option(
        '--log-format <format>',
        'json, pretty, or auto: pretty on a terminal (default auto)',
      ).argParser(logFormat),
    )
    .option('--audit <file>', 'append an audit line per call to FILE (or "stderr")')
    .addOption(
      new Option(
        '--auth <mode>',
        "none, token or oauth (default: the config's, or none)",
      ).argParser(authMode),
    )
    .option('--data <dir>', 'the data folder holding the sessions database (default ./.moonhub)')
    .option('--url <url>', "the endpoint's public URL (default http://HOST:PORT/mcp)")
    .option('--session <uuid>', 'with --stdio: act as this session (its agent, target and view)')
    .option('--force', 'serve auth mode none on a non-loopback address anyway (dangerous)')
    .option(
      '--redis <url>',
      "share sessions, revocations and notifications with other instances through this Redis (the config's cluster.redis)",
    )
    .addOption(
      new Option(
        '--workers <n>',
        'worker processes serving one port on this machine (default 1)',
      ).argParser(workerCount),
    )
    .addOption(
      new Option(
        '--drain-ms <ms>',
        'on SIGTERM/SIGINT, how long calls in flight may finish (default 10000)',
      ).argParser(drainMillis),
    )
    .action(async (flags: ServeFlags) => (await serveModule()).serve(flags));
}

function addRunCommand(program: Command): void {
  program
    .command('run')
    .description('run a Lua script against the loaded plugins and print its return value as JSON')
    .argument('<file>', 'the Lua script')
    .argument('[args...]', "words the script gets as its chunk's `...`")
    .option('-p, --plugins <dir>', 'a plugins directory (repeatable)', collect, [])
    .option(
      '--root <dir>',
      'workspace root: require() finds modules here (default: current directory)',
    )
    .addOption(
      new Option('--timeout <ms>', 'time limit of the script').default(30_000).argParser(positive),
    )
    .option('-c, --config <file>', 'config file (JSON or YAML)')
    .addOption(
      new Option('--log-level <level>', 'log level on stderr (default warn)').argParser(logLevel),
    )
    .action((file: string, args: string[], flags: RunFlags) => run(file, args, flags));
}

function addDevCommand(program: Command): void {
  program
    .command('dev')
    .description(
      'serve for development: reload on save, a line per call, client set-up printed at start',
    )
    .option(
      '-p, --plugins <dir>',
      'a plugins directory (repeatable; default ./plugins)',
      collect,
      [],
    )
    .addOption(new Option('--port <n>', 'HTTP port (default 8848)').argParser(port))
    .option('-c, --config <file>', 'config file (default ./moonhub.yaml when present)')
    .addOption(
      new Option('--log-level <level>', 'log level on stderr (default warn)').argParser(logLevel),
    )
    .action((flags: ServeFlags) => dev(flags));
}

export async function main(argv: string[]): Promise<void> {
  await buildProgram().parseAsync(argv);
}
