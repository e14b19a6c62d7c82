/** Compiling Lua chunks onto a stack: user text as text, our own setup chunks from bytecode. */
import { LuaError } from './errors.js';
import { type LuaRuntime } from './runtime.js';
import { LuaStatus } from './wasm.js';

/** Compiles text `source` and leaves the function on L's stack (a LuaError on a syntax error). */
export function loadOnStack(
  rt: LuaRuntime,
  L: number,
  source: string | Uint8Array,
  chunkname: string,
): void {
  const { mod, mem } = rt;
  // The source goes in as a Lua string, whose bytes luaL_loadbufferx then reads in place.
  mem.pushString(L, source);
  const p = mod._lua_tolstring(L, -1, mem.out);
  const size = mod.HEAPU32[mem.out >> 2] as number;
  const status = mod._luaL_loadbufferx(L, p, size, mem.cstr(chunkname), mem.cstr('t'));
  // stack: source, function-or-error
  mod._lua_rotate(L, -2, 1);
  mod._lua_settop(L, -2);
  if (status !== LuaStatus.Ok) {
    const msg = mem.readText(L, -1);
    mod._lua_settop(L, -2);
    throw new LuaError(msg);
  }
}

/**
 * Compiles one of our own setup chunks, from its bytecode after the first time in this module.
 * Binary mode is only ever used here, on bytes our own compiler made from our own source.
 */
export function loadSetupOnStack(
  rt: LuaRuntime,
  L: number,
  source: string,
  chunkname: string,
): void {
  const key = `${chunkname}\n${source}`;
  const compiled = rt.setupChunk(key);
  if (compiled === undefined) {
    loadOnStack(rt, L, source, chunkname);
    rt.rememberSetupChunk(L, key);
    return;
  }
  const { mod, mem } = rt;
  const status = mod._luaL_loadbufferx(
    L,
    compiled.ptr,
    compiled.size,
    mem.cstr(chunkname),
    mem.cstr('b'),
  );
  if (status !== LuaStatus.Ok) {
    const msg = mem.readText(L, -1);
    mod._lua_settop(L, -2);
    throw new LuaError(msg);
  }
}
