/** Shared helpers for the Lua runtime tests: a state with `task.sleep`, and load-call-unref. */
import { LuaState, type CallLimits, type LuaStateOptions } from '../../src/lua/state.js';
import { LuaArgumentError } from '../../src/lua/errors.js';

export const MiB = 1024 * 1024;

/**
 * A fresh state with `task.sleep(ms)` defined the way src/lua-api/task.ts defines it (an async
 * host function resolving after a timer), kept here so these tests depend on src/lua only.
 */
export async function newState(opts: Partial<LuaStateOptions> = {}): Promise<LuaState> {
  const state = await LuaState.create({ name: 'test', ...opts });
  state.defineLibrary('task', {
    sleep: {
      async: true,
      fn: (args) => {
        const ms = args[0];
        if (typeof ms !== 'number' || !(ms >= 0))
          throw new LuaArgumentError("bad argument #1 to 'sleep'");
        return new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), ms));
      },
    },
  });
  return state;
}

/** Loads `source`, calls it with `args`, releases the chunk, and returns its results. */
export async function run(
  state: LuaState,
  source: string,
  args: unknown[] = [],
  limits?: CallLimits,
): Promise<unknown[]> {
  const ref = state.load(source, '=test');
  try {
    return await state.call(ref, args, limits);
  } finally {
    state.unref(ref);
  }
}

/** Runs a full collection in Lua (several: the string table shrinks by half per cycle). */
export async function collect(state: LuaState): Promise<number> {
  await run(state, 'for _ = 1, 6 do collectgarbage() end');
  return state.memoryUsed;
}
