/**
 * The context functions that send at once and never wait: `context.progress`, `context.log`
 * and `context.poll_later`. A MessageGate (when given) cuts and rate-limits their text.
 */
import { LuaArgumentError } from '../lua/errors.js';
import type { HostFunctionSpec } from '../lua/state.js';
import { LOG_LEVELS, type LogLevel } from '../registry/types.js';
import { typeName, type LiveLookup } from './context-calls.js';
import type { MessageGate } from './plugin-limits.js';

export function noticeFunctions(
  live: LiveLookup,
  gate: MessageGate | undefined,
): Record<string, HostFunctionSpec> {
  return {
    progress: {
      fn: (args) => {
        const c = live(args[0], 'progress');
        const [, done, total, message] = args;
        if (typeof done !== 'number' || !Number.isFinite(done)) {
          throw new LuaArgumentError(
            `bad argument #1 to 'progress' (number expected, got ${typeName(done)})`,
          );
        }
        if (total !== undefined && (typeof total !== 'number' || !Number.isFinite(total))) {
          throw new LuaArgumentError(
            `bad argument #2 to 'progress' (number or nil expected, got ${typeName(total)})`,
          );
        }
        if (message !== undefined && typeof message !== 'string') {
          throw new LuaArgumentError(
            `bad argument #3 to 'progress' (string or nil expected, got ${typeName(message)})`,
          );
        }
        if (c.progress !== undefined && done < c.progress) {
          throw new LuaArgumentError(
            `context.progress: progress must not go backwards (${done} after ${c.progress})`,
          );
        }
        c.progress = done;
        if (c.ctx.peer === undefined) return false;
        const text = gate === undefined ? message : gate.admit(message ?? '');
        if (text === undefined) return false;
        return c.ctx.peer.progress(done, total, message === undefined ? undefined : text);
      },
    },
    log: {
      fn: (args) => {
        const c = live(args[0], 'log');
        const [, level, data, logger] = args;
        if (typeof level !== 'string' || !LOG_LEVELS.has(level)) {
          throw new LuaArgumentError(
            `bad argument #1 to 'log' (a log level expected: debug, info, notice, warning, error, critical, alert or emergency; got ${typeof level === 'string' ? `'${level}'` : typeName(level)})`,
          );
        }
        if (data === undefined) {
          throw new LuaArgumentError("bad argument #2 to 'log' (value expected)");
        }
        if (logger !== undefined && typeof logger !== 'string') {
          throw new LuaArgumentError(
            `bad argument #3 to 'log' (string or nil expected, got ${typeName(logger)})`,
          );
        }
        if (c.ctx.peer === undefined) return undefined;
        const admitted = gate === undefined ? data : gate.admitValue(data);
        if (admitted !== undefined) c.ctx.peer.log(level as LogLevel, admitted, logger);
        return undefined;
      },
    },
    poll_later: {
      fn: (args) => {
        const c = live(args[0], 'poll_later');
        const ms = args[1] ?? 1000;
        if (typeof ms !== 'number' || !Number.isFinite(ms) || ms < 0) {
          throw new LuaArgumentError(
            `bad argument #1 to 'poll_later' (milliseconds >= 0 or nil expected, got ${typeName(ms)})`,
          );
        }
        return c.ctx.peer?.pollLater?.(Math.round(ms)) ?? false;
      },
    },
  };
}
