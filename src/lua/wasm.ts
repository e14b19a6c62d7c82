/**
 * The Lua 5.4 C API as wasmoon's WebAssembly build exports it, called raw (numbers and BigInts,
 * no per-call marshalling): the value bridge and the scheduler sit directly on these.
 *
 * wasmoon's own `doString`/engine layer is not used: it leaks a stack slot per returned value
 * (FIELD-NOTES: ~60 calls then a trap that poisons every state of the module).
 */
import { LuaFactory } from 'wasmoon';

/** The raw exports we use. Pointers and sizes are wasm32 numbers; lua_Integer is a BigInt. */
export interface LuaModule {
  HEAPU8: Uint8Array;
  HEAP32: Int32Array;
  HEAPU32: Uint32Array;
  addFunction(fn: (...args: number[]) => number | void, sig: string): number;
  removeFunction(ptr: number): void;
  _malloc(size: number): number;
  _free(ptr: number): void;
  _realloc(ptr: number, size: number): number;
  _lua_newstate(alloc: number, ud: number): number;
  _lua_close(L: number): void;
  _lua_gettop(L: number): number;
  _lua_settop(L: number, idx: number): void;
  _lua_pushvalue(L: number, idx: number): void;
  _lua_rotate(L: number, idx: number, n: number): void;
  _lua_checkstack(L: number, n: number): number;
  _lua_xmove(from: number, to: number, n: number): void;
  _lua_type(L: number, idx: number): number;
  _lua_isinteger(L: number, idx: number): number;
  _lua_tonumberx(L: number, idx: number, isnum: number): number;
  _lua_tointegerx(L: number, idx: number, isnum: number): bigint;
  _lua_toboolean(L: number, idx: number): number;
  _lua_tolstring(L: number, idx: number, len: number): number;
  _lua_touserdata(L: number, idx: number): number;
  _lua_tothread(L: number, idx: number): number;
  _lua_topointer(L: number, idx: number): number;
  _lua_rawlen(L: number, idx: number): number;
  _lua_rawequal(L: number, a: number, b: number): number;
  _lua_pushnil(L: number): void;
  _lua_pushnumber(L: number, n: number): void;
  _lua_pushinteger(L: number, n: bigint): void;
  _lua_pushlstring(L: number, s: number, len: number): number;
  _lua_pushcclosure(L: number, fn: number, n: number): void;
  _lua_pushboolean(L: number, b: number): void;
  _lua_pushlightuserdata(L: number, p: number): void;
  _lua_getglobal(L: number, name: number): number;
  _lua_getfield(L: number, idx: number, k: number): number;
  _lua_rawget(L: number, idx: number): number;
  _lua_rawgeti(L: number, idx: number, n: bigint): number;
  _lua_createtable(L: number, narr: number, nrec: number): void;
  _lua_getmetatable(L: number, idx: number): number;
  _lua_setglobal(L: number, name: number): void;
  _lua_setfield(L: number, idx: number, k: number): void;
  _lua_rawset(L: number, idx: number): void;
  _lua_rawseti(L: number, idx: number, n: bigint): void;
  _lua_setmetatable(L: number, idx: number): number;
  _lua_pcallk(
    L: number,
    nargs: number,
    nresults: number,
    errfunc: number,
    ctx: number,
    k: number,
  ): number;
  _lua_resume(L: number, from: number, narg: number, nres: number): number;
  _lua_status(L: number): number;
  _lua_error(L: number): number;
  _lua_next(L: number, idx: number): number;
  _lua_concat(L: number, n: number): void;
  _lua_newthread(L: number): number;
  _lua_resetthread(L: number): number;
  _lua_sethook(L: number, fn: number, mask: number, count: number): void;
  _luaL_ref(L: number, t: number): number;
  _luaL_unref(L: number, t: number, ref: number): void;
  _luaL_loadbufferx(L: number, buf: number, size: number, name: number, mode: number): number;
  /** Writes the function on top of the stack as a binary chunk through `writer` (a lua_Writer). */
  _lua_dump(L: number, writer: number, data: number, strip: number): number;
  _luaL_traceback(L: number, L1: number, msg: number, level: number): void;
  _luaL_where(L: number, level: number): void;
  _luaL_tolstring(L: number, idx: number, len: number): number;
  _luaopen_base(L: number): number;
  _luaopen_coroutine(L: number): number;
  _luaopen_table(L: number): number;
  _luaopen_string(L: number): number;
  _luaopen_utf8(L: number): number;
  _luaopen_math(L: number): number;
  _luaopen_os(L: number): number;
  _luaopen_debug(L: number): number;
}

export const LUA_REGISTRYINDEX = -1001000;
export const upvalueIndex = (i: number): number => LUA_REGISTRYINDEX - i;

export const enum LuaStatus {
  Ok = 0,
  Yield = 1,
  ErrRun = 2,
  ErrSyntax = 3,
  ErrMem = 4,
  ErrErr = 5,
}

export const enum LuaType {
  None = -1,
  Nil = 0,
  Boolean = 1,
  LightUserdata = 2,
  Number = 3,
  String = 4,
  Table = 5,
  Function = 6,
  Userdata = 7,
  Thread = 8,
}

export const LUA_MASKCOUNT = 8;

const TYPE_NAMES: Record<number, string> = {
  [LuaType.None]: 'no value',
  [LuaType.Nil]: 'nil',
  [LuaType.Boolean]: 'boolean',
  [LuaType.LightUserdata]: 'userdata',
  [LuaType.Number]: 'number',
  [LuaType.String]: 'string',
  [LuaType.Table]: 'table',
  [LuaType.Function]: 'function',
  [LuaType.Userdata]: 'userdata',
  [LuaType.Thread]: 'thread',
};

/** The name Lua's own messages use for a type ("got nil", "got table"). */
export function luaTypeName(type: number): string {
  return TYPE_NAMES[type] ?? 'userdata';
}

let modulePromise: Promise<LuaModule> | undefined;

/**
 * The shared wasm module. Every state lives in its linear memory, so a trap would take them all
 * down: the bridge keeps stack discipline strict and never lets a JS exception cross into C.
 */
export function loadLuaModule(): Promise<LuaModule> {
  modulePromise ??= loadDirect();
  return modulePromise;
}

/**
 * wasmoon ships an emscripten build with assertions: every `_lua_*` it exposes is a JS wrapper
 * that checks the runtime is up and forwards through `apply(null, arguments)`, about a sixth of
 * the CPU of making a state. Once the module is up those checks hold forever, so the module's
 * functions are pointed at the instance's own exports. The instance is seen by watching
 * `WebAssembly.instantiate` while (and only while) wasmoon loads it; if it is not seen, the
 * wrappers stay and everything works as before.
 */
/** The bits of the WebAssembly global used here (the build's lib has no WebAssembly types). */
interface WasmGlobal {
  instantiate: (...args: unknown[]) => Promise<unknown>;
  Instance: abstract new (...args: never[]) => { exports: Record<string, unknown> };
}

async function loadDirect(): Promise<LuaModule> {
  const wasm = (globalThis as unknown as { WebAssembly: WasmGlobal }).WebAssembly;
  const original = wasm.instantiate;
  let exports: Record<string, unknown> | undefined;
  const watching = async (...args: unknown[]): Promise<unknown> => {
    const out = await original.apply(wasm, args);
    const instance = out instanceof wasm.Instance ? out : (out as { instance?: unknown }).instance;
    if (instance instanceof wasm.Instance && 'lua_newstate' in instance.exports)
      exports ??= instance.exports;
    return out;
  };
  wasm.instantiate = watching;
  let mod: LuaModule;
  try {
    mod = ((await new LuaFactory().getLuaModule()) as unknown as { module: LuaModule }).module;
  } finally {
    if (wasm.instantiate === watching) wasm.instantiate = original;
  }
  if (exports !== undefined) {
    const table = mod as unknown as Record<string, unknown>;
    for (const key of Object.keys(table)) {
      const fn = key.startsWith('_') ? exports[key.slice(1)] : undefined;
      if (typeof fn === 'function') table[key] = fn;
    }
  }
  return mod;
}
