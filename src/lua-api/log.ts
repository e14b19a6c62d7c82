/** `log.debug/info/warn/error(message, fields?)`: the hub's structured log, tagged with the plugin. */
import type { Logger } from '../log.js';
import type { LuaState } from '../lua/state.js';
import { checkString, optTable } from './args.js';
import type { MessageGate } from './plugin-limits.js';

/** `gate` (absent: unbounded) cuts long messages and drops those past the plugin's rate. */
export function installLog(state: LuaState, logger: Logger, gate?: MessageGate): void {
  const level = (name: 'debug' | 'info' | 'warn' | 'error') => ({
    fn: (args: unknown[], call: Parameters<typeof checkString>[1]) => {
      const message = typeof args[0] === 'string' ? args[0] : checkString(args, call, 1, name);
      const fields = optTable(args, call, 2, name) ?? {};
      if (gate === undefined) return void logger[name](fields, message);
      const admitted = gate.admit(message);
      if (admitted === undefined) return undefined;
      const extra = gate.admitFields(fields);
      logger[name](extra, admitted);
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
