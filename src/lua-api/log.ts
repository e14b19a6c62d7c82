/** `log.debug/info/warn/error(message, fields?)`: the hub's structured log, tagged with the plugin. */
import type { Logger } from '../log.js';
import type { LuaState } from '../lua/state.js';
import { checkString, optTable } from './args.js';

export function installLog(state: LuaState, logger: Logger): void {
  const level = (name: 'debug' | 'info' | 'warn' | 'error') => ({
    fn: (args: unknown[], call: Parameters<typeof checkString>[1]) => {
      const message = typeof args[0] === 'string' ? args[0] : checkString(args, call, 1, name);
      const fields = optTable(args, call, 2, name) ?? {};
      logger[name](fields, message);
      return undefined;
    },
  });
  state.defineLibrary('log', {
    debug: level('debug'),
    info: level('info'),
    warn: level('warn'),
    error: level('error'),
  });
}
