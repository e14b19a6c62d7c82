/**
 * Reading what a coroutine left on its stack (a host-wait yield, an error and its traceback) and
 * taking a reference to a function nested in a host call's argument.
 */
import { BridgeError, type Bridge } from './bridge.js';
import { LuaError, LuaLimitError, limitMessage } from './errors.js';
import { bytesReplacer } from './host-json.js';
import { type LuaRuntime } from './runtime.js';
import { LUA_REGISTRYINDEX, LuaStatus, LuaType, type LuaModule } from './wasm.js';

/** Light userdata pointer marking a yield that waits on the host. */
export const MARK_POINTER = 1;

/** Reads a `(MARK, id)` yield and clears it off the thread; undefined for any other yield. */
export function takeYield(mod: LuaModule, thread: number, nres: number): number | undefined {
  let id: number | undefined;
  if (
    nres === 2 &&
    mod._lua_type(thread, -2) === LuaType.LightUserdata &&
    mod._lua_touserdata(thread, -2) === MARK_POINTER
  ) {
    id = mod._lua_tonumberx(thread, -1, 0);
  }
  mod._lua_settop(thread, -nres - 1);
  return id;
}

/** The LuaError (with traceback) for a coroutine that ended with `status`. */
export function errorFrom(
  rt: LuaRuntime,
  bridge: Bridge,
  L: number,
  thread: number,
  status: number,
  memoryMax: number,
): LuaError {
  const { mod, mem } = rt;
  let message: string;
  if (status === LuaStatus.ErrMem) {
    return new LuaLimitError('memory', limitMessage('memory', memoryMax));
  }
  const t = mod._lua_type(thread, -1);
  if (t === LuaType.String || t === LuaType.Number) {
    message = mem.readText(thread, -1);
  } else if (t === LuaType.Nil || t === LuaType.None) {
    message = 'nil';
  } else {
    try {
      const v = bridge.read(thread, -1, { opaque: 'skip' });
      message = JSON.stringify(v, bytesReplacer) ?? String(v);
    } catch (err) {
      message = err instanceof BridgeError ? `(error object: ${err.message})` : '(error object)';
    }
  }
  let traceback: string | undefined;
  try {
    mod._luaL_traceback(L, thread, 0, 0);
    traceback = mem.readText(L, -1);
    mod._lua_settop(L, -2);
  } catch {
    traceback = undefined;
  }
  return new LuaError(message, traceback);
}

/** A registry reference to the function at `path` inside argument i, or undefined. */
export function refPath(
  rt: LuaRuntime,
  L: number,
  i: number,
  path: (string | number)[],
): number | undefined {
  const { mod } = rt;
  const top = mod._lua_gettop(L);
  mod._lua_pushvalue(L, i);
  for (const key of path) {
    if (mod._lua_type(L, -1) !== LuaType.Table) {
      mod._lua_settop(L, top);
      return undefined;
    }
    if (typeof key === 'number') mod._lua_rawgeti(L, -1, BigInt(key));
    else {
      rt.mem.pushString(L, key);
      mod._lua_rawget(L, -2);
    }
    mod._lua_rotate(L, -2, 1);
    mod._lua_settop(L, -2);
  }
  if (mod._lua_type(L, -1) !== LuaType.Function) {
    mod._lua_settop(L, top);
    return undefined;
  }
  const ref = mod._luaL_ref(L, LUA_REGISTRYINDEX);
  mod._lua_settop(L, top);
  return ref;
}
