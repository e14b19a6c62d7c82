/**
 * The bodies of the prelude's `print`, `json.encode` and `json.decode` host functions: pure
 * conversions over a Lua stack, kept apart from the state that registers them.
 */
import { type Bridge } from './bridge.js';
import { LuaArgumentError } from './errors.js';
import { type ModuleMemory } from './memory.js';
import { luaTypeName, type LuaModule, type LuaType } from './wasm.js';

/** `print`'s arguments through Lua's own tostring, tab-separated. */
export function tostringArgs(mod: LuaModule, mem: ModuleMemory, L: number, nargs: number): string {
  const parts: string[] = [];
  for (let i = 1; i <= nargs; i++) {
    mod._luaL_tolstring(L, i, 0);
    parts.push(mem.readText(L, -1));
    mod._lua_settop(L, -2);
  }
  return parts.join('\t');
}

export function jsonEncode(bridge: Bridge, L: number, nargs: number): string {
  if (nargs < 1) throw new LuaArgumentError("bad argument #1 to 'encode' (value expected)");
  try {
    return JSON.stringify(bridge.read(L, 1), bytesReplacer) ?? 'null';
  } catch (err) {
    throw new LuaArgumentError(`json.encode: ${(err as Error).message}`);
  }
}

export function jsonDecode(text: unknown, nargs: number, typeOf: (i: number) => LuaType): unknown {
  if (typeof text !== 'string') {
    // Fix (test/lua): Lua type names ("got nil", "got table", not JS's "undefined"/"object") and
    // the `json.decode:` prefix docs/lua-api.md promises for a non-string argument.
    const got =
      nargs < 1
        ? 'no value'
        : text instanceof Uint8Array
          ? 'non-UTF-8 bytes'
          : luaTypeName(typeOf(1));
    throw new LuaArgumentError(
      `json.decode: bad argument #1 to 'decode' (string expected, got ${got})`,
    );
  }
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new LuaArgumentError(`json.decode: ${(err as Error).message}`);
  }
}

export function bytesReplacer(_key: string, value: unknown): unknown {
  return value instanceof Uint8Array ? new TextDecoder().decode(value) : value;
}
