/**
 * A hub without a network face: the registry plus the plugins loaded into it. `serve` puts the
 * MCP transports in front of it; `run` executes a script against it.
 */
import type { Logger } from './log.js';
import { Registry } from './registry/registry.js';
import type { CallableBounds } from './registry/callable-bounds.js';
import { PluginHost, type PluginIsolation } from './plugins/plugin-host.js';
import { MAX_LOGGED } from './plugins/plugin-warnings.js';
import { registerCodeMode, type ExecuteOptions, type InnerCallSink } from './execute/index.js';
import type { ExecuteStats } from './execute/worker-pool.js';
import type { PluginLimits, SessionViews } from './lua-api/index.js';
import type { RefusalReport } from './lua-api/inner-refusals.js';
import { registerHubStatus } from './hub-status.js';
import { upstreamsOf } from './upstream/manager.js';
import { startConfiguredUpstreams } from './upstream/from-config.js';
import type { PluginSettings, UpstreamConfig } from './config/config.js';

export interface HubOptions {
  hubId?: string;
  pluginDirs: string[];
  logger: Logger;
  watch?: boolean;
  memoryLimit?: number;
  /** The `execute` and `search_tools` built-ins and execute's limits; false leaves them out. */
  execute?: ExecuteOptions | false;
  /** Sessions' views, for `mcp.list_tools(session_uuid)`. */
  sessionViews?: SessionViews;
  /** `plugins.settings` of the config: each plugin's `secrets.get` values. */
  pluginSettings?: Record<string, PluginSettings>;
  /** `upstreams` of the config: proxies owned by their names. */
  upstreams?: Record<string, UpstreamConfig>;
  /** Each plugin's bounds (config plugin_limits). */
  pluginLimits?: Partial<PluginLimits>;
  /** Where plugins run (default 'worker') and the grace of their hard stop (default 500 ms). */
  isolation?: PluginIsolation;
  hardStopGraceMs?: number;
  /** Keep a plugin worker started ahead of need (`plugins.spare_worker`; default: when watching). */
  spareWorker?: boolean;
  /** Callers' contexts each plugin worker keeps (`plugins.context_table_size`; default 256). */
  contextTableSize?: number;
  /**
   * The longest names and URIs the front door lets a call carry (`limits.name_length`,
   * `limits.subscriptions.uri_length`): a definition past them registers with a warning.
   */
  callable?: CallableBounds;
}

export interface Hub {
  registry: Registry;
  plugins: PluginHost;
  /** Settles once the config's upstreams have each connected or failed a first time. */
  upstreamsReady: Promise<void>;
  /** The `execute` scripts running and queued now (metrics); undefined without execute. */
  executeStats(): ExecuteStats | undefined;
  /** `execute`'s inner calls, each announced here from now on (operations.ts: the observers). */
  observeInnerCalls(sink: InnerCallSink): void;
  /**
   * Told from now on of the inner calls (plugins' `mcp.call`/`tools.use`/`mcp.call_tool`,
   * `execute` scripts') refused by a limit, by its metric label (`moonhub_limit_refusals_total`).
   */
  onRefused(listener: RefusalReport): () => void;
  stop(): Promise<void>;
}

export async function startHub(opts: HubOptions): Promise<Hub> {
  const registry = new Registry({ hubId: opts.hubId, callable: opts.callable });
  const refusalListeners = new Set<RefusalReport>();
  const refused: RefusalReport = (limit, count) => {
    for (const l of refusalListeners) l(limit, count);
  };
  // A prompt, resource or completion handler that raised is the plugin's error, not the hub's.
  registry.onHandlerError((err) =>
    opts.logger.warn(
      { plugin: err.owner, [err.kind]: err.subject, err: err.message },
      `plugin ${err.kind} handler failed`,
    ),
  );
  const plugins = new PluginHost({
    registry,
    dirs: opts.pluginDirs,
    logger: opts.logger,
    watch: opts.watch,
    memoryLimit: opts.memoryLimit,
    sessionViews: opts.sessionViews,
    settings: opts.pluginSettings,
    reservedNames: new Set(Object.keys(opts.upstreams ?? {})),
    // A plugin's inner calls keep the front door's name and URI bounds (lua-api/inner-refusals.ts).
    limits:
      opts.callable === undefined
        ? opts.pluginLimits
        : {
            ...opts.pluginLimits,
            nameLength: opts.callable.nameLength,
            uriLength: opts.callable.uriLength,
          },
    onRefused: refused,
    isolation: opts.isolation,
    hardStopGraceMs: opts.hardStopGraceMs,
    spareWorker: opts.spareWorker,
    contextTableSize: opts.contextTableSize,
  });
  // One log line per warning, and the plugin's status (hub_status, the dashboard) keeps it.
  registry.onDefinitionWarning((owner, message) => {
    const log = plugins.noteWarning(owner, message);
    if (log !== 'quiet') opts.logger.warn({ plugin: owner }, message);
    if (log === 'last')
      opts.logger.warn(
        { plugin: owner },
        `plugin ${owner}: ${MAX_LOGGED} definition warnings logged for this load; the rest are counted in its status (hub_status)`,
      );
  });
  registerHubStatus(registry, plugins, opts.pluginDirs);
  const upstreamsReady = startConfiguredUpstreams(registry, opts.upstreams ?? {}, opts.logger);
  await plugins.start();
  const codeMode =
    opts.execute === false
      ? undefined
      : registerCodeMode(registry, { ...opts.execute, onRefused: refused }, opts.logger);
  const stop = async () => {
    await plugins.stop();
    // Upstream sessions end and stdio children are killed with the hub.
    await upstreamsOf(registry).stop();
    await codeMode?.close();
  };
  return {
    registry,
    plugins,
    upstreamsReady,
    stop,
    executeStats: () => codeMode?.stats(),
    observeInnerCalls: (sink) => codeMode?.observeInnerCalls(sink),
    onRefused: (listener) => {
      refusalListeners.add(listener);
      return () => refusalListeners.delete(listener);
    },
  };
}
