/**
 * Installs the calling API of LUA_API §3 into a state: `mcp.call/poll/listTools/image`,
 * `task.await/spawn`, `tools.use` and `notice`, all over one ToolCaller. Plugin states, `moonhub
 * run` scripts and `execute` scripts get the same functions; only the caller behind them differs.
 */
import type { CallLimits, LuaState } from '../lua/state.js';
import { CallTracker, type CallTrackerLimits } from './call-tracker.js';
import { installMcpCalls } from './mcp-calls.js';
import { installNotice } from './notice.js';
import { installTaskWaits, type TaskWatch } from './task.js';
import type { ToolCaller } from './tool-caller.js';
import { installTools } from './tools.js';

export interface ScriptApiOptions {
  /** The tools behind the calls; a function so a pre-made state can be bound to a run later. */
  caller: () => ToolCaller;
  /** The folder behind `/source/` for `mcp.image` paths. */
  root: () => string | undefined;
  limits?: CallTrackerLimits;
  /** Limits of each `task.spawn` coroutine (the time left to the script, its budget). */
  spawnLimits?: () => CallLimits;
  /**
   * `task.spawn` calls one call may make, and tasks outside calls that may run at once
   * (plugin_limits.spawn_per_call; unlimited if absent).
   */
  spawnPerCall?: number;
  /** Wall time of a task spawned outside any call (plugin_limits.background_task_ms). */
  backgroundTaskMs?: number;
  /** Told as tasks start and end (a plugin's worker: the hub's hard stop for each). */
  taskWatch?: TaskWatch;
}

export function installScriptApi(state: LuaState, opts: ScriptApiOptions): CallTracker {
  const tracker = new CallTracker(opts.caller, opts.limits);
  installMcpCalls(state, tracker, opts.caller, opts.root);
  installTaskWaits(state, tracker, {
    limits: opts.spawnLimits,
    perCall: opts.spawnPerCall,
    backgroundMs: opts.backgroundTaskMs,
    watch: opts.taskWatch,
  });
  installTools(state, tracker);
  installNotice(state, opts.caller);
  return tracker;
}
