/**
 * A hub without a network face: the registry plus the plugins loaded into it. `serve` puts the
 * MCP transports in front of it; `run` executes a script against it.
 */
import type { Logger } from './log.js';
import { Registry } from './registry/registry.js';
import { PluginHost, type PluginIsolation } from './plugins/plugin-host.js';
import { registerCodeMode, type ExecuteOptions } from './execute/index.js';
import type { SessionViews } from './lua-api/index.js';
import { registerHubStatus } from './upstream/hub-status.js';
import { upstreamsOf } from './upstream/manager.js';

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
  /** Where plugins run (default 'worker') and the grace of their hard stop (default 500 ms). */
  isolation?: PluginIsolation;
  hardStopGraceMs?: number;
}

export interface Hub {
  registry: Registry;
  plugins: PluginHost;
  stop(): Promise<void>;
}

export async function startHub(opts: HubOptions): Promise<Hub> {
  const registry = new Registry({ hubId: opts.hubId });
  const plugins = new PluginHost({
    registry,
    dirs: opts.pluginDirs,
    logger: opts.logger,
    watch: opts.watch,
    memoryLimit: opts.memoryLimit,
    sessionViews: opts.sessionViews,
    isolation: opts.isolation,
    hardStopGraceMs: opts.hardStopGraceMs,
  });
  registerHubStatus(registry, plugins, opts.pluginDirs);
  await plugins.start();
  const codeMode =
    opts.execute === false
      ? undefined
      : registerCodeMode(registry, opts.execute ?? {}, opts.logger);
  const stop = async () => {
    await plugins.stop();
    // Upstream sessions end and stdio children are killed with the hub.
    await upstreamsOf(registry).stop();
    await codeMode?.close();
  };
  return { registry, plugins, stop };
}
