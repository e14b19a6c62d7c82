/**
 * The `moonhub` command: `serve` (MCP over HTTP or stdio) and `run` (a Lua script against the
 * loaded plugins). Logs go to stderr; stdout carries only MCP (stdio) or a script's result.
 */
import { Command, InvalidArgumentError, Option } from 'commander';
import { resolve } from 'node:path';
import { checkLogFormat, checkLogLevel, createLogger, type LogFormat } from '../log.js';
import { startOperations } from '../operations.js';
import { startHub } from '../hub.js';
import {
  createMcpDispatcher,
  startHttpServer,
  type serveStdio,
  type HttpServerOptions,
} from '../server/index.js';
import { FlowLimits } from '../server/flow-limits.js';
import { packageVersion } from '../server/protocol.js';
import { resolveSettings, isAuthMode } from '../config/settings.js';
import type { AuthMode } from '../config/config.js';
import { Access, checkExposure, isLoopback } from '../access.js';
import { addSessionCommands } from './session-commands.js';
import { addConnectCommand } from './connect.js';
import { runScript } from './run-script.js';
import { toJsonText } from '../registry/results.js';
import { addAuthorCommands, projectDefaults } from './author-commands.js';
import { callLine, watchPlugins } from './dev-log.js';
import { clientSetup, clientSetupText } from '../sessions/client-setup.js';
import type { CallEvent } from '../server/dispatcher.js';
import type { Hub } from '../hub.js';
import { endpointUrl } from '../config/settings.js';
import { performanceOptionsOf } from '../config/performance-config.js';
import type { Cluster } from '../cluster/index.js';
import { runPrimary, workerSlot } from '../cluster/primary.js';
import { announce, instanceHeaders, openServeCluster, sharedSessions } from './serve-cluster.js';
import { bridgeResourceUpdates } from '../cluster/registry-bridge.js';
import { Drain } from '../server/drain.js';
import { drainMsOf } from '../config/shutdown-config.js';
import { drainMillis, serveDrainedStdio, shutdownOnSignal, stopHttpOnSignal } from './shutdown.js';
import { bridgePluginReloads } from '../cluster/plugin-reload-bridge.js';

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

function authMode(value: string): AuthMode {
  if (!isAuthMode(value)) throw new InvalidArgumentError('one of none, token, oauth');
  return value;
}

interface ServeFlags {
  plugins: string[];
  port?: number;
  host?: string;
  stdio?: boolean;
  config?: string;
  watch: boolean;
  logLevel?: string;
  logFormat?: LogFormat;
  audit?: string;
  hubId?: string;
  auth?: AuthMode;
  data?: string;
  url?: string;
  session?: string;
  force?: boolean;
  redis?: string;
  workers?: number;
  drainMs?: number;
}

/** What `moonhub dev` adds to `serve`: its per-call line and its start-up text. */
interface ServeHooks {
  onCall?: (e: CallEvent) => void;
  ready?: (hub: Hub, url: string | undefined) => void;
}

async function serve(flags: ServeFlags, hooks: ServeHooks = {}): Promise<void> {
  const logger = createLogger(flags.logLevel, { format: flags.logFormat });
  const s = resolveSettings(flags);
  if (s.dirs.length === 0 && s.config.upstreams === undefined)
    throw new Error(
      'no plugins directory: pass --plugins DIR or set plugins.dirs (or upstreams) in the config file',
    );
  if (flags.session !== undefined && !flags.stdio)
    throw new Error('--session is for --stdio; over HTTP a session presents its token');
  if (!flags.stdio) checkExposure(s, flags.force === true, logger);
  if (s.cluster.workers > 1 && workerSlot() === undefined) {
    if (flags.stdio) throw new Error('--workers is for HTTP; stdio serves one client');
    await runPrimary({
      workers: s.cluster.workers,
      logger,
      drainMs: drainMsOf(s.config.shutdown, flags.drainMs),
      onListening: ({ port }) =>
        process.stderr.write(
          `moonhub: serving MCP at ${endpointUrl(s, port)} (${s.cluster.workers} workers)\n`,
        ),
    });
    return;
  }
  let access: Access | undefined = undefined;
  // limits.streams/notices/rate: one set of bounds for the transport and its dispatcher; the
  // per-tool rate limits hold inside `execute` scripts too.
  const flow = new FlowLimits(s.flow);
  const innerRate = flow.toolGate();
  const hub = await startHub({
    hubId: s.hub_id,
    pluginDirs: s.dirs,
    logger,
    watch: flags.watch,
    execute: innerRate === undefined ? s.execute : { ...s.execute, innerRate },
    pluginSettings: s.config.plugins?.settings,
    upstreams: s.config.upstreams,
    pluginLimits: s.pluginLimits,
    isolation: s.isolation.mode,
    hardStopGraceMs: s.isolation.graceMs,
    spareWorker: s.isolation.spareWorker,
    contextTableSize: s.isolation.contextTableSize,
    sessionViews: (uuid) => (access === undefined ? null : access.viewOfSession(uuid)),
  });
  // A hub bound to a named address must accept that name in Host (DNS-rebinding check).
  const allowedHosts = isLoopback(s.host) ? [] : [s.host];
  try {
    access = await Access.open({
      settings: s,
      registry: hub.registry,
      logger,
      watch: flags.watch,
      originPolicy: { allowedHosts },
    });
  } catch (err) {
    await hub.stop();
    throw err;
  }
  const onError = (err: unknown) => logger.error({ err }, 'internal error while serving a request');
  // Graceful shutdown (src/cli/shutdown.ts): every request is tracked so SIGTERM can drain them.
  const drain = new Drain();
  const drainMs = drainMsOf(s.config.shutdown, flags.drainMs);
  let cluster: Cluster | undefined;
  // observe: metrics, traces, audit, health and dashboard (src/operations.ts).
  let ops: Awaited<ReturnType<typeof startOperations>>;
  try {
    cluster = flags.stdio ? undefined : await openServeCluster(s, logger);
    const reloads =
      cluster === undefined
        ? undefined
        : bridgePluginReloads(hub.plugins, cluster.bus, (err, plugin) =>
            logger.warn({ err, plugin }, 'a reload asked by another instance failed'),
          );
    ops = await startOperations({
      hub,
      access,
      settings: s,
      logger,
      originPolicy: { allowedHosts },
      audit: flags.audit,
      draining: () => drain.active,
      reloadPlugin: reloads?.reload,
    });
  } catch (err) {
    await Promise.allSettled([access.close(), hub.stop()]);
    throw err;
  }
  if (ops.metricsUrl !== undefined) process.stderr.write(`moonhub: metrics at ${ops.metricsUrl}\n`);
  if (cluster !== undefined) bridgeResourceUpdates(hub.registry, cluster.bus);
  // limits.rate.global: the cluster's buckets, beside each process's own.
  if (cluster !== undefined && s.flow.rateGlobal === true) flow.rate?.shareWith(cluster.counters());

  if (flags.stdio) {
    let server: ReturnType<typeof serveStdio>;
    let stalled = false;
    try {
      server = serveDrainedStdio(
        hub.registry,
        ops.stdio({
          input: process.stdin,
          output: process.stdout,
          onError,
          onCall: hooks.onCall,
          limits: s.serverLimits,
          flow,
          onStalled: (message) => {
            stalled = true;
            process.stderr.write(message + '\n');
          },
          ...performanceOptionsOf(s.config.performance),
          ...access.stdioOptions(flags.session),
        }),
        drain,
      );
    } catch (err) {
      await Promise.allSettled([ops.close(), access.close(), hub.stop()]);
      throw err;
    }
    process.stderr.write(`moonhub: serving MCP on stdio (${hub.registry.countTools()} tools)\n`);
    hooks.ready?.(hub, undefined);
    const stdio = server;
    let signalled = false;
    void shutdownOnSignal({
      logger,
      drain,
      drainMs,
      what: 'stdio',
      stopAccepting: () => (signalled = true),
      closeTransport: async () => stdio.close(),
      closeRest: async () => {
        await Promise.allSettled([ops.close(), access.close(), hub.stop()]);
      },
    });
    await server.closed;
    // Closed by a signal: the shutdown closes the rest and ends the process.
    if (signalled) return new Promise<never>(() => {});
    await Promise.allSettled([ops.close(), access.close(), hub.stop()]);
    // stdout cannot be closed: a write the peer never reads would keep the process forever.
    if (stalled) process.exit(1);
    return;
  }

  const httpOpts: HttpServerOptions = ops.http({
    host: s.host,
    port: s.port,
    onError,
    onCall: hooks.onCall,
    flow,
    allowedHosts,
    limits: s.serverLimits,
    ...performanceOptionsOf(s.config.performance),
    ...access.httpOptions(),
  });
  if (cluster !== undefined) httpOpts.sessions = sharedSessions(cluster, logger, httpOpts);
  const http = await startHttpServer(hub.registry, {
    ...httpOpts,
    dispatcher: drain.wrap(
      httpOpts.dispatcher ?? createMcpDispatcher(hub.registry, httpOpts),
      httpOpts.refused,
    ),
    drain,
    responseHeaders: instanceHeaders(cluster),
  });
  access.listening(http.url, http.handler);
  announce(http, hub.registry.countTools(), cluster);
  hooks.ready?.(hub, http.url);
  await stopHttpOnSignal({ logger, drain, drainMs, http }, async () => {
    await Promise.allSettled([ops.close(), access.close(), hub.stop()]);
    await cluster?.close();
  });
}

/** `moonhub dev`: serve with reloads, a human line per call, and the clients' set-up. */
function dev(flags: ServeFlags): Promise<void> {
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
    .action((flags: ServeFlags) => serve(flags));

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

  addSessionCommands(program, collect);
  addConnectCommand(program);
  addAuthorCommands(program, collect);

  return program;
}

export async function main(argv: string[]): Promise<void> {
  await buildProgram().parseAsync(argv);
}
