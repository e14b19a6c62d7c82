/** `task.sleep(ms)`: waits without blocking the hub (the calling coroutine yields). */
import { DEFAULT_TIMEOUT_MS, type CallLimits, type LuaState } from '../lua/state.js';
import { LuaArgumentError } from '../lua/errors.js';
import { LuaType } from '../lua/wasm.js';
import { badArgument, checkFunction, checkNumber } from './args.js';
import type { CallTracker } from './call-tracker.js';

const SPAWN_KEY = 'plugin_limits.spawn_per_call';

export function installTask(state: LuaState): void {
  state.defineLibrary('task', {
    sleep: {
      async: true,
      fn: (args, call) => {
        const ms = checkNumber(args, call, 1, 'sleep');
        if (!(ms >= 0) || !Number.isFinite(ms)) {
          throw new LuaArgumentError(
            `bad argument #1 to 'sleep' (a finite number of milliseconds >= 0 expected, got ${ms})`,
          );
        }
        return new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), ms));
      },
    },
  });
}

/** Reports tasks as they start and end (a plugin's worker: the hub keeps a hard stop for each). */
export interface TaskWatch {
  /** `background`: spawned outside any handler call (the top level, its tasks, a callback). */
  started(id: number, limitMs: number, background: boolean): void;
  ended(id: number): void;
}

/** Each state's stop for its background tasks (stopBackgroundTasks). */
const backgroundStops = new WeakMap<LuaState, AbortController>();

/**
 * Ends the state's background tasks (spawned outside any handler call) at their next wait and
 * refuses new ones: the plugin was reloaded or unloaded, and its old generation must not go on
 * acting beside the new one while calls it still serves finish.
 */
export function stopBackgroundTasks(state: LuaState): void {
  backgroundStops.get(state)?.abort();
}

/** The options of `task.spawn` in one state. */
export interface SpawnOptions {
  /** Limits of each task (the time left to the script, its budget); the defaults when absent. */
  limits?: () => CallLimits;
  /**
   * Tasks one handler call may spawn, and background tasks that may run at once (a lifetime
   * count outside calls ran out for good in a plugin that lives for days).
   */
  perCall?: number;
  /**
   * Wall time of a task spawned outside any call (`plugin_limits.background_task_ms`): no
   * call's limit covers it. Absent: the default call limit (5 s).
   */
  backgroundMs?: number;
  watch?: TaskWatch;
}

/** What `task.spawn` may start in one state: tasks per handler call, and outside calls at once. */
class SpawnBudget {
  /** Spawns per call, keyed by the call's tag (its context). */
  private readonly spawned = new WeakMap<object, number>();
  /** Tasks spawned outside any call (no tag) running now. */
  background = 0;
  /** Stops those (stopBackgroundTasks). */
  readonly stop = new AbortController();

  constructor(private readonly perCall: number) {}

  /** Why a task may not start for the call tagged `tag` (counting it if it may), or undefined. */
  refusal(tag: unknown): string | undefined {
    const perCall = this.perCall;
    if (typeof tag === 'object' && tag !== null) {
      const n = (this.spawned.get(tag) ?? 0) + 1;
      this.spawned.set(tag, n);
      if (n <= perCall) return undefined;
      return `spawn limit exceeded: one call may spawn at most ${perCall} tasks (${SPAWN_KEY})`;
    }
    if (this.stop.signal.aborted)
      return 'the plugin was reloaded or unloaded: its tasks outside handler calls have stopped';
    if (this.background < perCall) return undefined;
    return `spawn limit exceeded: at most ${perCall} tasks spawned outside a handler call (the top level, its tasks, callbacks) may run at once (${SPAWN_KEY}); await some first`;
  }
}

/**
 * `task.await(id | {ids})` and `task.spawn(fn, ...)` (LUA_API §3.4). await yields until the calls
 * end and returns their `mcp.poll` tables (an array, in order, for a list of ids). spawn runs `fn`
 * in a coroutine of its own that the host drives, so its waits overlap with the caller's; it
 * returns an id that `task.await` takes (the table then carries `value`, fn's first result).
 * Tasks spawned outside any handler call are bounded by how many run at once (a lifetime count
 * ran out for good in a long-lived plugin) and end early when stopBackgroundTasks is called.
 */
export function installTaskWaits(
  state: LuaState,
  tracker: CallTracker,
  opts: SpawnOptions = {},
): void {
  const spawnLimits = opts.limits ?? (() => ({}));
  const watch = opts.watch;
  const budget = new SpawnBudget(opts.perCall ?? Infinity);
  const stop = budget.stop;
  backgroundStops.set(state, stop);
  let nextTask = 1;
  state.defineLibrary('task', {
    await: {
      async: true,
      fn: (args, call) => {
        const what = args[0];
        if (typeof what === 'string' && call.typeOf(1) === LuaType.String)
          return tracker.wait(what);
        if (call.typeOf(1) === LuaType.Table && Array.isArray(what ?? [])) {
          const ids = (what ?? []) as unknown[];
          ids.forEach((id, i) => {
            if (typeof id !== 'string') {
              throw new LuaArgumentError(
                `bad argument #1 to 'await' (request id expected at index ${i + 1}, got ${id === null ? 'nil' : typeof id})`,
              );
            }
          });
          return Promise.all((ids as string[]).map((id) => tracker.wait(id)));
        }
        throw badArgument(1, 'await', 'request id or array of ids', call);
      },
    },
    spawn: {
      fn: (args, call) => {
        checkFunction(call, 1, 'spawn');
        const ref = call.ref(1);
        const rest = args.slice(1);
        // A task spawned inside a handler's call still acts for that call's caller.
        const tag = state.activeTag;
        const bg = typeof tag !== 'object' || tag === null;
        // A task spawned in a handler call has that handler's time limit (its timeout_ms), not
        // the default: a handler allowed 60 s may wait 60 s on what it spawned. One spawned
        // outside any call has the plugin's own bound for those.
        const callMs = bg ? opts.backgroundMs : state.activeTimeoutMs;
        const refused = budget.refusal(tag);
        if (refused !== undefined) {
          state.unref(ref);
          throw new LuaArgumentError(`task.spawn refused: ${refused}`);
        }
        if (bg) budget.background++;
        const id = tracker.spawn(async () => {
          const n = nextTask++;
          try {
            // Started after the current resume returns: never a resume nested inside a host call.
            await Promise.resolve();
            const limits: CallLimits = { tag, timeoutMs: callMs, ...spawnLimits() };
            if (bg) limits.signal ??= stop.signal;
            watch?.started(n, limits.timeoutMs ?? DEFAULT_TIMEOUT_MS, bg);
            const out = await state.call(ref, rest, limits);
            return out[0];
          } finally {
            state.unref(ref);
            if (bg) budget.background--;
            watch?.ended(n);
          }
        });
        if (typeof id !== 'string') {
          state.unref(ref);
          if (bg) budget.background--;
          throw new LuaArgumentError(`task.spawn refused: ${id.refused}`);
        }
        return id;
      },
    },
  });
}
