/**
 * Installs the Lua API into a state: everything a plugin (or a `moonhub run` script) sees besides
 * the sandboxed standard library and `json`, which the runtime itself provides.
 */
import type { Logger } from '../log.js';
import type { LuaState } from '../lua/state.js';
import type { Registry } from '../registry/registry.js';
import { installContext } from './context.js';
import { installLog } from './log.js';
import { installRegistryApi, type SessionViews } from './mcp-registry.js';
import { installProxyApi } from './proxy.js';
import { installChilkat } from './chilkat.js';
import { installTask, type TaskWatch } from './task.js';
import { installVfs } from './vfs.js';
import { installSecrets } from './secrets.js';
import { installScriptApi } from './script-api.js';
import { registryCaller, type ToolCaller } from './tool-caller.js';
import { activeHandlerContext, nestedContext, noticeData } from './nested-call.js';
import { builtinModule as chilkatModule } from './chilkat.js';
import { LIB_MCP_MODULE } from './botster-compat.js';
import { RefusalTally, type RefusalReport } from './inner-refusals.js';
import { CallsInFlight } from './calls-in-flight.js';
import type { CallContext } from '../registry/types.js';

/**
 * The built-in modules `require` finds before a plugin's own files: `chilkat` (an MCP client)
 * and `lib.mcp` (the state's own `mcp` table, which Botster plugins require).
 */
export function builtinModule(name: string): { source: string; chunkname: string } | undefined {
  return name === 'lib.mcp' ? LIB_MCP_MODULE : chilkatModule(name);
}
import {
  droppedMessage,
  MessageGate,
  PLUGIN_LIMIT_KEYS,
  resolvePluginLimits,
  type PluginLimits,
} from './plugin-limits.js';

export { endForgottenBatches, normalizeSchema, type SessionViews } from './mcp-registry.js';
export { luaContext } from './context.js';
export { installScriptApi, type ScriptApiOptions } from './script-api.js';
export { registryCaller, type ToolCaller } from './tool-caller.js';
export { settleUpstreams } from './proxy.js';
export { stopBackgroundTasks, type TaskWatch } from './task.js';
export { DEFAULT_PLUGIN_LIMITS, resolvePluginLimits, type PluginLimits } from './plugin-limits.js';

export interface ApiOptions {
  registry: Registry;
  /** Owner of what the state registers: the plugin name, or "script". */
  owner: string;
  logger: Logger;
  /** The folder behind `/source/` for `vfs` (none for a single-file plugin). */
  root?: string;
  /** Sessions' views, for `mcp.list_tools(session_uuid)`. */
  sessionViews?: SessionViews;
  /** The plugin's `plugins.settings.<name>` from the config, read with `secrets.get(key)`. */
  settings?: Readonly<Record<string, unknown>>;
  /** The plugin's bounds (plugin_limits in the config); defaults when absent. */
  limits?: Partial<PluginLimits>;
  /** Told as `task.spawn` tasks start and end (a worker: the hub keeps a hard stop for each). */
  taskWatch?: TaskWatch;
  /**
   * Told of the state's calls refused by a limit (`name_length`, `calls_in_flight`,
   * `calls_in_flight_per_principal`) and its log/notice/progress messages dropped by one
   * (`messages_per_second`, `messages_per_second_per_principal`), at most once per limit and
   * event-loop turn: the hub's refusal counter (a worker posts it to the hub's thread).
   */
  onRefused?: RefusalReport;
}

export function installApi(state: LuaState, opts: ApiOptions): void {
  const limits = resolvePluginLimits(opts.limits);
  const tally = opts.onRefused === undefined ? undefined : new RefusalTally(opts.onRefused);
  const refused = tally === undefined ? undefined : (limit: string) => tally.count(limit);
  const gate = messageGate(state, limits, opts.logger, refused);
  installContext(state, gate);
  // Per state, not per handler call: handler calls run at once as many as clients send, so a
  // per-call share would bound nothing; per state it bounds what the plugin makes the hub hold.
  // Within it each principal has a share, so one agent's fan-out cannot refuse every other
  // agent's calls into this plugin; the plugin's own calls (no handler) take the total only.
  // One count for mcp.call, tools.use and mcp.call_tool alike.
  const flight = new CallsInFlight({
    callsInFlight: { max: limits.callsInFlight, key: PLUGIN_LIMIT_KEYS.callsInFlight },
    callsInFlightPerPrincipal: {
      max: limits.callsInFlightPerPrincipal,
      key: PLUGIN_LIMIT_KEYS.callsInFlightPerPrincipal,
      principal: () => principalOf(activeHandlerContext(state)),
    },
    refused,
  });
  installRegistryApi(state, {
    registry: opts.registry,
    owner: opts.owner,
    sessionViews: opts.sessionViews,
    limits,
    warn: (message) => opts.logger.warn(message),
    refused,
    flight,
  });
  installTask(state);
  installLog(state, opts.logger, gate);
  installVfs(state, opts.root, { writeBytes: limits.writeBytes });
  installSecrets(state, opts.settings);
  // mcp.call & co. in a plugin act with the plugin's own authority (all tools), like call_tool,
  // except inside a handler, where they act for the handler's caller (nested-call.ts).
  const caller = registryCaller({
    registry: opts.registry,
    ctx: { hub_id: opts.registry.hubId, plugin: opts.owner },
    notice: (text, params) => {
      const admitted = gate.admit(text);
      if (admitted !== undefined) opts.logger.info({ source: 'notice', params }, admitted);
    },
  });
  const callerNow = (): ToolCaller => {
    const outer = activeHandlerContext(state);
    if (outer === undefined) return caller;
    return registryCaller({
      registry: opts.registry,
      ctx: nestedContext(outer, opts.owner),
      notice: (text, params) => {
        const admitted = gate.admit(text);
        if (admitted === undefined) return;
        opts.logger.info({ source: 'notice', params }, admitted);
        outer.peer?.log('info', noticeData(admitted, params), opts.owner);
      },
    });
  };
  installScriptApi(state, {
    caller: callerNow,
    root: () => opts.root,
    spawnPerCall: limits.spawnPerCall,
    backgroundTaskMs: limits.backgroundTaskMs,
    taskWatch: opts.taskWatch,
    limits: { flight, nameLength: limits.nameLength, refused },
  });
  installProxyApi(state, {
    registry: opts.registry,
    owner: opts.owner,
    logger: opts.logger,
    maxUpstreams: limits.upstreams,
    answerBytes: limits.upstreamAnswerBytes,
    pipelineDepth: limits.upstreamPipeline,
    maxEntries: limits.registrations,
    requestsPerSecond: limits.upstreamRequestsPerSecond,
    requestsInFlight: limits.upstreamRequestsInFlight,
    importIntervalMs: limits.upstreamImportIntervalMs,
  });
  installChilkat(state, { root: opts.root });
}

/**
 * Whose share a call started now takes: the running handler's principal ('' for callers nobody
 * authenticated, one principal together, as `limits.http_in_flight_per_principal` counts them),
 * or undefined outside any handler.
 */
/**
 * One gate per state: its log lines, notices and progress messages share one rate, of which
 * each principal (the running handler call's) has a share that another's flood cannot take.
 * Each drop goes to `refused` by the limit that dropped it (the RefusalTally: a map update, one
 * report a turn), so a flood costs no more for being counted.
 */
function messageGate(
  state: LuaState,
  limits: PluginLimits,
  logger: Logger,
  refused: ((limit: string) => void) | undefined,
): MessageGate {
  return new MessageGate(
    limits,
    (n) => logger.warn(droppedMessage(n, limits)),
    PLUGIN_LIMIT_KEYS,
    {
      rate: limits.messagesPerSecondPerPrincipal,
      principal: () => principalOf(activeHandlerContext(state)),
    },
    refused,
  );
}

function principalOf(outer: CallContext | undefined): string | undefined {
  return outer === undefined ? undefined : (outer.principal ?? '');
}
