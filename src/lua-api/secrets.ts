/**
 * `secrets.get(key)`: the plugin's own settings from the config file (`plugins.settings.<name>`,
 * `${ENV_VAR}` already substituted). The only way a plugin reaches configuration or the
 * environment; the values come in through the options object, never from a module-level store.
 */
import { LuaMulti, type LuaState } from '../lua/state.js';
import { checkString } from './args.js';

export function installSecrets(
  state: LuaState,
  settings: Readonly<Record<string, unknown>> | undefined,
): void {
  state.defineLibrary('secrets', {
    get: {
      fn: (args, call) => {
        const key = checkString(args, call, 1, 'get');
        if (settings === undefined || !Object.hasOwn(settings, key))
          return new LuaMulti([undefined]);
        // A copy each time: a plugin that changes what it got cannot change the next read.
        return structuredClone(settings[key]);
      },
    },
  });
}
