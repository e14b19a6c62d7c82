/**
 * `moonhub serve` (and `dev`, which adds two hooks): the start-up sequence, one function per
 * phase (settings, hub, access, cluster and operations, then the transport: stdio or HTTP), each
 * transport ending in the graceful shutdown of src/cli/shutdown.ts. A phase that fails closes
 * what the phases before it opened.
 */
import { createLogger, type LogFormat, type Logger } from '../log.js';
import { startOperations, type Operations } from '../operations.js';
import { startHub, type Hub } from '../hub.js';
import {
  createMcpDispatcher,
  startHttpServer,
  type serveStdio,
  type HttpServerOptions,
} from '../server/index.js';
import { FlowLimits } from '../server/flow-limits.js';
import { resolveLimits } from '../server/session-limits.js';
import type { CallableBounds } from '../registry/callable-bounds.js';
import { endpointUrl, resolveSettings, type Settings } from '../config/settings.js';
import type { AuthMode } from '../config/config.js';
import { Access, checkExposure, isLoopback } from '../access.js';
import type { CallEvent } from '../server/dispatcher.js';
import type { SessionViews } from '../lua-api/index.js';
import { performanceOptionsOf } from '../config/performance-config.js';
import type { Cluster } from '../cluster/index.js';
import { runPrimary, workerAnswerKey, workerSlot } from '../cluster/primary.js';
import {
  announce,
  instanceHeaders,
  openServeCluster,
  sharedRequestStates,
  sharedSessions,
} from './serve-cluster.js';
import { bridgeResourceUpdates } from '../cluster/registry-bridge.js';
import { Drain } from '../server/drain.js';
import { drainMsOf } from '../config/shutdown-config.js';
import { serveDrainedStdio, shutdownOnSignal, stopHttpOnSignal } from './shutdown.js';
import { bridgePluginReloads } from '../cluster/plugin-reload-bridge.js';

export interface ServeFlags {
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
export interface ServeHooks {
  onCall?: (e: CallEvent) => void;
  ready?: (hub: Hub, url: string | undefined) => void;
}

/** What the phases opened, for the transport to serve and, at the end, to close. */
interface Opened {
  flags: ServeFlags;
  s: Settings;
  logger: Logger;
  flow: FlowLimits;
  hub: Hub;
  access: Access;
  allowedHosts: string[];
  onError: (err: unknown) => void;
  drain: Drain;
  drainMs: number;
  cluster: Cluster | undefined;
  ops: Operations;
}

export async function serve(flags: ServeFlags, hooks: ServeHooks = {}): Promise<void> {
  const logger = createLogger(flags.logLevel, { format: flags.logFormat });
  const s = checkedSettings(flags, logger);
  if (s.cluster.workers > 1 && workerSlot() === undefined) return servePrimary(flags, s, logger);
  // A worker takes its answer key out of the environment before it starts anything.
  workerAnswerKey();
  let access: Access | undefined = undefined;
  // limits.streams/notices/rate: one set of bounds for the transport and its dispatcher; the
  // per-tool rate limits hold inside `execute` scripts too.
  const flow = new FlowLimits(s.flow);
  const hub = await startServeHub(flags, s, logger, flow, (uuid) =>
    access === undefined ? null : access.viewOfSession(uuid),
  );
  // A hub bound to a named address must accept that name in Host (DNS-rebinding check).
  const allowedHosts = isLoopback(s.host) ? [] : [s.host];
  access = await openAccess(flags, s, logger, hub, allowedHosts);
  const onError = (err: unknown) => logger.error({ err }, 'internal error while serving a request');
  // Graceful shutdown (src/cli/shutdown.ts): every request is tracked so SIGTERM can drain them.
  const drain = new Drain();
  const drainMs = drainMsOf(s.config.shutdown, flags.drainMs);
  const opened = { flags, s, logger, flow, hub, access, allowedHosts, onError, drain, drainMs };
  const { cluster, ops } = await startClusterAndOperations(opened);
  if (flags.stdio) return serveOverStdio({ ...opened, cluster, ops }, hooks);
  return serveOverHttp({ ...opened, cluster, ops }, hooks);
}

/** The settings from flags and config, refused when they cannot serve. */
function checkedSettings(flags: ServeFlags, logger: Logger): Settings {
  const s = resolveSettings(flags);
  if (s.dirs.length === 0 && s.config.upstreams === undefined)
    throw new Error(
      'no plugins directory: pass --plugins DIR or set plugins.dirs (or upstreams) in the config file',
    );
  if (flags.session !== undefined && !flags.stdio)
    throw new Error('--session is for --stdio; over HTTP a session presents its token');
  if (!flags.stdio) checkExposure(s, flags.force === true, logger);
  return s;
}

/** `--workers N`: this process is the primary; the workers it forks serve. */
async function servePrimary(flags: ServeFlags, s: Settings, logger: Logger): Promise<void> {
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
}

function startServeHub(
  flags: ServeFlags,
  s: Settings,
  logger: Logger,
  flow: FlowLimits,
  sessionViews: SessionViews,
): Promise<Hub> {
  const innerRate = flow.toolGate();
  // A script's inner calls keep the front door's bounds: the per-tool rate limits, the name length.
  const nameLength = s.serverLimits.nameLength;
  const execute = { ...s.execute, ...(nameLength === undefined ? {} : { nameLength }) };
  return startHub({
    hubId: s.hub_id,
    pluginDirs: s.dirs,
    logger,
    watch: flags.watch,
    execute: innerRate === undefined ? execute : { ...execute, innerRate },
    pluginSettings: s.config.plugins?.settings,
    upstreams: s.config.upstreams,
    pluginLimits: s.pluginLimits,
    isolation: s.isolation.mode,
    hardStopGraceMs: s.isolation.graceMs,
    spareWorker: s.isolation.spareWorker,
    contextTableSize: s.isolation.contextTableSize,
    sessionViews,
    callable: callableBoundsOf(s),
  });
}

/** What the front door lets a call name (limits.name_length, limits.subscriptions.uri_length). */
function callableBoundsOf(s: Settings): CallableBounds {
  const limits = resolveLimits(s.serverLimits);
  return {
    nameLength: limits.nameLength,
    nameKey: 'limits.name_length',
    uriLength: limits.subscriptionUriLength,
    uriKey: 'limits.subscriptions.uri_length',
  };
}

async function openAccess(
  flags: ServeFlags,
  s: Settings,
  logger: Logger,
  hub: Hub,
  allowedHosts: string[],
): Promise<Access> {
  try {
    return await Access.open({
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
}

/** The scale-out modes' shared state (none over stdio), then observe (src/operations.ts). */
async function startClusterAndOperations(
  o: Omit<Opened, 'cluster' | 'ops'>,
): Promise<{ cluster: Cluster | undefined; ops: Operations }> {
  const { flags, s, logger, hub, access, drain } = o;
  let cluster: Cluster | undefined;
  // observe: metrics, traces, audit, health and dashboard (src/operations.ts).
  let ops: Operations;
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
      originPolicy: { allowedHosts: o.allowedHosts },
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
  if (cluster !== undefined && s.flow.rateGlobal === true)
    o.flow.rate?.shareWith(cluster.counters());
  return { cluster, ops };
}

async function serveOverStdio(o: Opened, hooks: ServeHooks): Promise<void> {
  const { s, hub, access, ops, drain } = o;
  let server: ReturnType<typeof serveStdio>;
  let stalled = false;
  try {
    server = serveDrainedStdio(
      hub.registry,
      ops.stdio({
        input: process.stdin,
        output: process.stdout,
        onError: o.onError,
        onCall: hooks.onCall,
        limits: s.serverLimits,
        flow: o.flow,
        onStalled: (message) => {
          stalled = true;
          process.stderr.write(message + '\n');
        },
        ...performanceOptionsOf(s.config.performance),
        ...access.stdioOptions(o.flags.session),
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
    logger: o.logger,
    drain,
    drainMs: o.drainMs,
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
}

async function serveOverHttp(o: Opened, hooks: ServeHooks): Promise<void> {
  const { s, hub, access, ops, drain, cluster, logger } = o;
  const httpOpts: HttpServerOptions = ops.http({
    host: s.host,
    port: s.port,
    onError: o.onError,
    onCall: hooks.onCall,
    flow: o.flow,
    allowedHosts: o.allowedHosts,
    limits: s.serverLimits,
    ...performanceOptionsOf(s.config.performance),
    ...access.httpOptions(),
    ...(cluster === undefined
      ? {}
      : { requestStates: sharedRequestStates(cluster, s.serverLimits.requestStateTtlMs) }),
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
  await stopHttpOnSignal({ logger, drain, drainMs: o.drainMs, http }, async () => {
    await Promise.allSettled([ops.close(), access.close(), hub.stop()]);
    await cluster?.close();
  });
}
