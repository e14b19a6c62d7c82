/**
 * Everything an operator watches, put together for `serve`: metrics, traces (OTEL_*), the audit
 * log, health checks, live calls and the dashboard. It hands the transports their observed
 * dispatcher and the extra HTTP routes, so the server modules need no change: `http()` and
 * `stdio()` take the options a transport would get and return them with those two added.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from './log.js';
import type { Hub } from './hub.js';
import type { Access } from './access.js';
import type { Settings } from './config/settings.js';
import { observeSettingsOf } from './config/observe-config.js';
import {
  DEFAULT_MAX_BODY_BYTES,
  createMcpDispatcher,
  createRequestGuard,
  type AuthVerdict,
  type HttpServerOptions,
  type OriginPolicy,
  type StdioOptions,
} from './server/index.js';
import { upstreamsOf } from './upstream/manager.js';
import { redactUrl } from './upstream/status-redact.js';
import { setUpstreamCallHook, type UpstreamCallHook } from './upstream/call-hook.js';
import {
  observeDispatcher,
  observeInnerCalls,
  type CallObserver,
  type RequestTracer,
  type Transport,
} from './observe/call-observer.js';
import { HubMetrics, REFUSAL_BY_STATUS } from './observe/metrics.js';
import { AuditLog } from './observe/audit.js';
import { LiveCalls } from './observe/live-calls.js';
import { tracingWanted } from './observe/otel-env.js';
import { operatorRoutes, startMetricsServer, type Route } from './observe/operator-routes.js';
import { dashboardApi } from './dashboard/dashboard-api.js';
import { dashboardPage } from './dashboard/static-files.js';

export interface OperationsOptions {
  hub: Hub;
  access: Access;
  settings: Settings;
  logger: Logger;
  originPolicy: OriginPolicy;
  /** `--audit FILE|stderr`, over the config's `observe.audit.to`. */
  audit?: string;
  /** True once a graceful shutdown began (`/readyz` then answers 503). */
  draining?: () => boolean;
  /** Cluster modes: the dashboard's plugin reload, told to every process (cluster/). */
  reloadPlugin?: (name: string) => Promise<boolean>;
}

export interface Operations {
  http<T extends HttpServerOptions>(opts: T): T;
  stdio<T extends StdioOptions>(opts: T): T;
  /** The separate metrics address's URL, when configured. */
  metricsUrl: string | undefined;
  close(): Promise<void>;
}

/** What the pieces of `startOperations` share while it puts them together. */
interface Wiring {
  o: OperationsOptions;
  cfg: ReturnType<typeof observeSettingsOf>;
  registry: Hub['registry'];
  upstreams: () => ReturnType<ReturnType<typeof upstreamsOf>['status']>;
  identityOf: (principal: string) => ReturnType<Access['identityOf']>;
  observers: CallObserver[];
  closers: (() => unknown)[];
}

export async function startOperations(o: OperationsOptions): Promise<Operations> {
  const { hub, access, settings } = o;
  const registry = hub.registry;
  const w: Wiring = {
    o,
    cfg: observeSettingsOf(settings.config.observe, o.audit),
    registry,
    upstreams: () => upstreamsOf(registry).status(),
    identityOf: (p: string) => access.identityOf(p),
    observers: [],
    closers: [],
  };
  const metrics = startMetrics(w);
  const tracer = await startTracer(w);
  let hook: UpstreamCallHook | undefined;
  if (tracer !== undefined) hook = tracer.upstreamHook(hook);
  if (metrics !== undefined) hook = metrics.upstreamHook(hook);
  setUpstreamCallHook(registry, hook);
  startAudit(w);

  const live = new LiveCalls({
    keep: w.cfg.keepCalls,
    maxViewers: w.cfg.maxStreams,
    identityOf: w.identityOf,
    bufferBytes: settings.flow.streamBufferBytes,
  });
  if (w.cfg.dashboard) w.observers.push(live.observer);
  // A revoked admin token's live stream is cut when the hub sees the revocation.
  const unlisten = access.onSessionsChanged(() => {
    const cut = live.recheck();
    if (cut > 0) o.logger.info({ cut }, 'dashboard live streams of a revoked token cut');
  });
  w.closers.push(() => {
    unlisten();
    live.close();
  });
  // A script's inner calls are seen like requests (metrics via="execute", audit, dashboard).
  if (w.observers.length > 0)
    hub.observeInnerCalls(observeInnerCalls(w.observers, w.cfg.auditTo !== undefined));

  const { routes, metricsUrl } = await operatorRouteList(w, metrics, live);
  return transportsOf(w, metrics, tracer, routes, metricsUrl);
}

/** The Prometheus metrics, when `observe.metrics` is on, fed by plugin events from now on. */
function startMetrics(w: Wiring): HubMetrics | undefined {
  const { hub, access } = w.o;
  if (!w.cfg.metrics) return undefined;
  const metrics = new HubMetrics(
    {
      registry: w.registry,
      plugins: hub.plugins,
      upstreams: w.upstreams,
      execute: () => hub.executeStats(),
      legacySessions: () => {
        const sessions = access.httpHandler()?.sessions;
        if (sessions === undefined) return undefined;
        let streams = 0;
        for (const s of sessions.values())
          if (s.stream !== undefined && !s.stream.closed) streams++;
        return { sessions: sessions.size, streams };
      },
      listenStreams: () => access.httpHandler()?.listenStreams,
      connections: () => access.httpHandler()?.connections?.(),
      subscriptionBytes: () => access.httpHandler()?.sessions.subscriptionBudget?.bytes,
    },
    w.cfg.maxToolSeries,
  );
  w.observers.push(metrics.observer);
  // The loads before serving count too; later ones arrive as events.
  for (const p of hub.plugins.status())
    metrics.pluginEvent({ type: p.loaded ? 'loaded' : 'failed', name: p.name });
  w.closers.push(hub.plugins.onEvent((e) => metrics.pluginEvent(e)));
  // Inner calls (plugins', execute scripts') refused by a limit count like requests refused.
  w.closers.push(hub.onRefused((limit, count) => metrics.refused(limit, count)));
  return metrics;
}

async function startTracer(w: Wiring): Promise<RequestTracer | undefined> {
  if (!tracingWanted()) return undefined;
  // Loaded only when asked for: with tracing off no OpenTelemetry code runs at all.
  const { startTracing } = await import('./observe/tracing.js');
  const tracer = startTracing();
  tracer?.instrument(w.registry);
  w.closers.push(() => tracer?.shutdown());
  w.o.logger.info('tracing on: spans go to the OTLP endpoint of the OTEL_* variables');
  return tracer;
}

function startAudit(w: Wiring): void {
  if (w.cfg.auditTo === undefined) return;
  const { registry, upstreams } = w;
  const audit = new AuditLog({
    to: w.cfg.auditTo,
    includeArguments: w.cfg.auditArguments,
    identityOf: w.identityOf,
    upstreamOf: (tool) => {
      const owner = registry.getTool(tool)?.owner;
      const u = upstreams().find((p) => p.owner === owner && tool.startsWith(p.prefix));
      return u === undefined ? undefined : redactUrl(u.url);
    },
  });
  w.observers.push(audit.observer);
  w.closers.push(() => audit.close());
}

/** Health, metrics (here or on their own address) and the dashboard, as HTTP routes. */
async function operatorRouteList(
  w: Wiring,
  metrics: HubMetrics | undefined,
  live: LiveCalls,
): Promise<{ routes: Route[]; metricsUrl: string | undefined }> {
  const { o, cfg, registry, upstreams } = w;
  const { hub, access, settings } = o;
  const requestGuard = createRequestGuard(o.originPolicy);
  const guard = (req: IncomingMessage) => requestGuard(req.headers);
  const isAdminToken = (t: string) => access.isAdminToken(t);
  // Redis mode: the admin token checked after the announcements already received, as the MCP
  // endpoint's (a revocation through another instance is never missed by a busy one).
  const beforeCheck = access.beforeTokenCheck();
  const health = {
    plugins: () => hub.plugins.status(),
    upstreams,
    requirePlugins: cfg.requirePlugins,
    requiredUpstreams: cfg.requiredUpstreams,
    draining: o.draining,
  };
  let metricsUrl: string | undefined;
  const routes: Route[] = [];
  if (cfg.metricsListen !== undefined) {
    const server = await startMetricsServer(
      operatorRoutes({ metrics, health }),
      cfg.metricsListen.host,
      cfg.metricsListen.port,
      settings.serverLimits,
    );
    metricsUrl = server.url;
    w.closers.push(() => server.close());
    routes.push(operatorRoutes({ metrics: undefined, health }));
  } else {
    routes.push(operatorRoutes({ metrics, health, isAdminToken, guard, beforeCheck }));
  }
  if (cfg.dashboard) {
    routes.push(
      dashboardApi({
        registry,
        plugins:
          o.reloadPlugin === undefined
            ? hub.plugins
            : {
                status: () => hub.plugins.status(),
                memoryUsage: () => hub.plugins.memoryUsage(),
                reload: o.reloadPlugin,
              },
        pluginDirs: settings.dirs,
        upstreams,
        sessions: () => access.sessionList(),
        viewOf: (p) => access.views.filterFor(p),
        live,
        isAdminToken,
        beforeCheck,
        guard,
        authMode: settings.authMode,
        refused: metrics === undefined ? undefined : (l) => metrics.refused(l),
      }),
      dashboardPage(cfg.dashboardPath),
    );
  }
  return { routes, metricsUrl };
}

/** The `Operations` handed to `serve`: transport options with the observed dispatcher and routes. */
function transportsOf(
  w: Wiring,
  metrics: HubMetrics | undefined,
  tracer: RequestTracer | undefined,
  routes: Route[],
  metricsUrl: string | undefined,
): Operations {
  const { registry, observers, closers } = w;
  const logger = w.o.logger;
  const wrap = (transport: Transport, d: ReturnType<typeof createMcpDispatcher>) => {
    // Stream cut-offs, dropped notices and rate refusals count with the other refusals.
    if (metrics !== undefined) d.flow.refused = (limit) => metrics.refused(limit);
    return observeDispatcher(d, transport, observers, tracer);
  };
  return {
    http(opts) {
      const other = opts.otherRoutes;
      const tracing = tracer;
      const refusals = metrics === undefined ? undefined : refusalCounter(metrics, opts);
      const mcpPath = opts.path ?? '/mcp';
      // The session-side limits count their refusals where they refuse (session-limits.ts).
      const limited = { ...opts, refused: refusedBy(metrics, opts.refused) };
      return {
        ...limited,
        dispatcher: wrap('http', opts.dispatcher ?? createMcpDispatcher(registry, limited)),
        authenticate: refusals?.authenticate ?? opts.authenticate,
        otherRoutes: (req, res) => {
          tracing?.bindHttp(req);
          refusals?.watch(req, res);
          // The MCP endpoint is none of the operator's routes: skip them on the hot path.
          if (req.url === mcpPath) return other?.(req, res) ?? false;
          try {
            for (const r of routes) if (r(req, res)) return true;
          } catch (err) {
            // A failing operator route must not take the hub down with it.
            logger.error({ err, url: req.url }, 'operator route failed');
            if (!res.headersSent) res.writeHead(500, { 'Content-Type': 'application/json' });
            res.end('{"error":"internal error"}');
            return true;
          }
          return other?.(req, res) ?? false;
        },
      };
    },
    stdio(opts) {
      const limited = { ...opts, refused: refusedBy(metrics, opts.refused) };
      return {
        ...limited,
        dispatcher: wrap('stdio', opts.dispatcher ?? createMcpDispatcher(registry, limited)),
      };
    },
    metricsUrl,
    async close() {
      setUpstreamCallHook(registry, undefined);
      for (const c of closers.reverse()) await c();
    },
  };
}

/** The refusal counter of the session-side limits: the metrics' when metrics are on. */
function refusedBy(
  metrics: HubMetrics | undefined,
  given: ((limit: string) => void) | undefined,
): ((limit: string) => void) | undefined {
  return metrics === undefined ? given : (limit) => metrics.refused(limit);
}

/**
 * Counts the HTTP refusals that never reach the dispatcher, by limit, without a listener on
 * every response: failed authentication through the authenticate hook, and a 'finish' listener
 * only on requests that may be refused for their size.
 */
function refusalCounter(metrics: HubMetrics, opts: HttpServerOptions) {
  const maxBody = opts.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const auth = opts.authenticate;
  const counted = (v: AuthVerdict): AuthVerdict => {
    if (!v.ok) metrics.refused(REFUSAL_BY_STATUS[v.status] ?? 'authentication');
    return v;
  };
  const onFinish = function (this: ServerResponse) {
    const limit = REFUSAL_BY_STATUS[this.statusCode];
    // Authentication and the session limits are counted where they refuse.
    if (limit !== undefined && limit !== 'authentication' && limit !== 'sessions')
      metrics.refused(limit);
  };
  return {
    authenticate:
      auth === undefined
        ? undefined
        : (req: IncomingMessage) => {
            const v = auth(req);
            return v instanceof Promise ? v.then(counted) : counted(v);
          },
    watch(req: IncomingMessage, res: ServerResponse): void {
      if (req.method !== 'POST') return;
      const length = req.headers['content-length'];
      if (length === undefined || Number(length) > maxBody) res.once('finish', onFinish);
    },
  };
}
