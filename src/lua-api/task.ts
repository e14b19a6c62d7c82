/** `task.sleep(ms)`: waits without blocking the hub (the calling coroutine yields). */
import type { CallLimits, LuaState } from '../lua/state.js';
import { LuaArgumentError } from '../lua/errors.js';
import { LuaType } from '../lua/wasm.js';
import { badArgument, checkFunction, checkNumber } from './args.js';
import type { CallTracker } from './call-tracker.js';

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

/**
 * `task.await(id | {ids})` and `task.spawn(fn, ...)` (LUA_API §3.4). await yields until the calls
 * end and returns their `mcp.poll` tables (an array, in order, for a list of ids). spawn runs `fn`
 * in a coroutine of its own that the host drives, so its waits overlap with the caller's; it
 * returns an id that `task.await` takes (the table then carries `value`, fn's first result).
 */
export function installTaskWaits(
  state: LuaState,
  tracker: CallTracker,
  spawnLimits: () => CallLimits,
  spawnPerCall = Infinity,
): void {
  // Spawns per call, keyed by the call's tag (its context); the top level counts as one call.
  const spawned = new WeakMap<object, number>();
  let untagged = 0;
  const countSpawn = (tag: unknown): number => {
    if (typeof tag !== 'object' || tag === null) return ++untagged;
    const n = (spawned.get(tag) ?? 0) + 1;
    spawned.set(tag, n);
    return n;
  };
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
        if (countSpawn(tag) > spawnPerCall) {
          state.unref(ref);
          throw new LuaArgumentError(
            `task.spawn refused: spawn limit exceeded: one call may spawn at most ${spawnPerCall} tasks (plugin_limits.spawn_per_call)`,
          );
        }
        const id = tracker.spawn(async () => {
          // Started after the current resume returns: never a resume nested inside a host call.
          await Promise.resolve();
          try {
            const out = await state.call(ref, rest, { tag, ...spawnLimits() });
            return out[0];
          } finally {
            state.unref(ref);
          }
        });
        if (typeof id !== 'string') {
          state.unref(ref);
          throw new LuaArgumentError(`task.spawn refused: ${id.refused}`);
        }
        return id;
      },
    },
  });
}
