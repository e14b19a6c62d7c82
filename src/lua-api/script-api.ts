/**
 * Installs the calling API of LUA_API §3 into a state: `mcp.call/poll/listTools/image`,
 * `task.await/spawn`, `tools.use` and `notice`, all over one ToolCaller. Plugin states, `moonhub
 * run` scripts and `execute` scripts get the same functions; only the caller behind them differs.
 */
import type { CallLimits, LuaState } from '../lua/state.js';
import { CallTracker, type CallTrackerLimits } from './call-tracker.js';
import { installMcpCalls } from './mcp-calls.js';
import { installNotice } from './notice.js';
import { installTaskWaits } from './task.js';
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
  /** `task.spawn` calls one call may make (plugin_limits.spawn_per_call; unlimited if absent). */
  spawnPerCall?: number;
}

export function installScriptApi(state: LuaState, opts: ScriptApiOptions): CallTracker {
  const tracker = new CallTracker(opts.caller, opts.limits);
  installMcpCalls(state, tracker, opts.caller, opts.root);
  installTaskWaits(state, tracker, opts.spawnLimits ?? (() => ({})), opts.spawnPerCall);
  installTools(state, tracker);
  installNotice(state, opts.caller);
  return tracker;
}
