/** Compiling Lua chunks onto a stack: user text as text, our own setup chunks from bytecode. */
import { LuaError } from './errors.js';
import { type CompiledChunk, type LuaRuntime } from './runtime.js';
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
  loadCompiled(rt, L, compiled, chunkname);
}

/**
 * Compiles a script's text, from the bytecode of the same text compiled before in this module
 * when it is still kept (at most `cacheBytes`; 0: always from the text). Why: an execute run
 * compiles its script in a fresh state on a worker that has just woken, 12-15 µs for the bench's
 * eight lines against ~3x less from bytecode (docs/performance.md, "execute, session 13"). The
 * bytes loaded in binary mode are always our compiler's output for exactly this text: the text is
 * the key, and a text is compiled in text mode (`t`) before anything is kept.
 */
export function loadScriptOnStack(
  rt: LuaRuntime,
  L: number,
  source: string,
  chunkname: string,
  cacheBytes: number,
): void {
  if (cacheBytes <= 0) return loadOnStack(rt, L, source, chunkname);
  const key = `${chunkname}\n${source}`;
  const compiled = rt.scriptChunk(key);
  if (compiled !== undefined) return loadCompiled(rt, L, compiled, chunkname);
  loadOnStack(rt, L, source, chunkname);
  rt.rememberScriptChunk(L, key, cacheBytes);
}

function loadCompiled(rt: LuaRuntime, L: number, compiled: CompiledChunk, chunkname: string): void {
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
