/** Errors raised by the Lua runtime, each naming what went wrong. */

import type { LuaLimit } from '../errors.js';

export type { LuaLimit };

/** A Lua error (runtime or syntax), with the message Lua produced (`file:line: text`). */
export class LuaError extends Error {
  readonly traceback: string | undefined;
  constructor(message: string, traceback?: string) {
    super(message);
    this.name = 'LuaError';
    this.traceback = traceback;
  }
}

/** A call stopped because it broke one of its limits. */
export class LuaLimitError extends LuaError {
  readonly limit: LuaLimit;
  constructor(limit: LuaLimit, message: string) {
    super(message);
    this.name = 'LuaLimitError';
    this.limit = limit;
  }
}

/** Thrown by a host function to raise a Lua error at the calling Lua code's position. */
export class LuaArgumentError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'LuaArgumentError';
  }
}

export function limitMessage(limit: LuaLimit, amount: number): string {
  switch (limit) {
    case 'timeout':
      return `timeout: the call ran longer than its ${amount} ms limit`;
    case 'instructions':
      return `instruction budget exceeded: the call ran more than ${amount} Lua instructions`;
    case 'memory':
      return `memory limit exceeded: the Lua state may use at most ${formatBytes(amount)}`;
  }
}

function formatBytes(n: number): string {
  if (n >= 1024 * 1024 && n % (1024 * 1024) === 0) return `${n / (1024 * 1024)} MiB`;
  if (n >= 1024 && n % 1024 === 0) return `${n / 1024} KiB`;
  return `${n} bytes`;
}
