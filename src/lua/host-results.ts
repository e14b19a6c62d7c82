/**
 * What a host function's return value becomes on the Lua stack: values pushed now, or, for an
 * async function, a pending id the running call's coroutine yields on until the promise settles.
 */
import { type Bridge } from './bridge.js';
import { LuaArgumentError } from './errors.js';
import { type ActiveCall, type LuaRuntime } from './runtime.js';
import { LuaMulti } from './state-options.js';

/** A call in flight: the runtime's view plus the host promises its coroutine waits on. */
export interface RunningCall extends ActiveCall {
  pending: Map<number, Promise<unknown>>;
  tag?: unknown;
}

let nextPendingId = 1;

/** Pushes a sync host function's result(s); returns how many. */
export function pushResults(bridge: Bridge, L: number, result: unknown): number {
  if (result === undefined) return 0;
  if (result instanceof LuaMulti) {
    for (const v of result.values) bridge.push(L, v);
    return result.values.length;
  }
  bridge.push(L, result);
  return 1;
}

/** Files an async host function's promise under a new id with the running call; pushes the id. */
export function registerPending(rt: LuaRuntime, L: number, result: unknown): number {
  const call = rt.active as RunningCall | undefined;
  if (!call) {
    throw new LuaArgumentError('this function waits, and can only be called inside a running call');
  }
  const id = nextPendingId++;
  const promise = Promise.resolve(result);
  // Keep an early rejection from being reported as unhandled before the scheduler takes it.
  promise.catch(() => undefined);
  call.pending.set(id, promise);
  rt.mod._lua_pushnumber(L, id);
  return 1;
}
