/** `task.sleep(ms)`: waits without blocking the hub (the calling coroutine yields). */
import type { LuaState } from '../lua/state.js';
import { LuaArgumentError } from '../lua/errors.js';
import { checkNumber } from './args.js';

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
