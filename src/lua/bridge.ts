/**
 * The JS <-> Lua value bridge, written on the raw C API (about twice as fast as wasmoon's
 * generic conversion). The rules, tested both ways:
 * - JSON null is `json.null` (a NULL light userdata); `nil` inside an array is a hole read as null.
 * - A JS array becomes a table marked with the shared array metatable, so `[]` round-trips as an
 *   array; an unmarked table is an array when its keys are exactly 1..n (holes allowed while the
 *   table is at least half full), an object otherwise, and `{}` when empty.
 * - Integers stay integers (lua_Integer), other numbers are floats.
 * - Strings that are not UTF-8 come out as Uint8Array, and a Uint8Array goes in as raw bytes.
 */
import type { ModuleMemory } from './memory.js';
import { LUA_REGISTRYINDEX, LuaType, type LuaModule } from './wasm.js';

export class BridgeError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BridgeError';
  }
}

/** Light userdata pointer used for JSON null. */
export const NULL_POINTER = 0;

export const MAX_DEPTH = 100;

/**
 * What one read may produce, in bytes (strings by length, other values and keys at a few bytes
 * each). Lua can share one string many times over (`t[i] = s` for 300 i's), so the JS copy can
 * be far larger than the state's memory; this keeps a read from filling the hub's heap.
 */
export const DEFAULT_MAX_READ_BYTES = 64 * 1024 * 1024;

/** Empty slots a marked array (`json.array()`) may hold beyond its values: `t[1e8] = true`. */
export const MAX_ARRAY_HOLES = 1024;

/** A value past a size bound (`maxBytes`, or a sparse array); `limit` names the bound. */
export class BridgeSizeError extends BridgeError {
  constructor(
    message: string,
    readonly limit: number,
  ) {
    super(message);
    this.name = 'BridgeSizeError';
  }
}

/**
 * A JS object pushed as a table that carries the metatable behind a registry reference: how the
 * host hands Lua a plain-data table that also answers method lookups (the handler context).
 */
export class WithMetatable {
  constructor(
    readonly value: Record<string, unknown>,
    readonly metatableRef: number,
  ) {}
}

export interface ReadOptions {
  /** What to do with functions, threads and userdata: throw (default) or read as undefined. */
  opaque?: 'throw' | 'skip';
  /** Tables nested deeper than this are an error (default MAX_DEPTH). */
  maxDepth?: number;
  /** Bytes the whole value may take once read (default DEFAULT_MAX_READ_BYTES). */
  maxBytes?: number;
}

export class Bridge {
  private readonly mod: LuaModule;
  private readonly mem: ModuleMemory;
  /** Registry reference of the metatable that marks tables as JSON arrays. */
  readonly arrayMtRef: number;
  /** Bytes the read in progress may still produce (reads are synchronous, never nested). */
  private left = 0;
  private maxBytes = 0;

  constructor(mem: ModuleMemory, L: number) {
    this.mem = mem;
    this.mod = mem.mod;
    this.mod._lua_createtable(L, 0, 1);
    this.mem.pushString(L, 'array');
    this.mod._lua_setfield(L, -2, this.mem.cstr('__jsontype'));
    this.arrayMtRef = this.mod._luaL_ref(L, LUA_REGISTRYINDEX);
  }

  pushArrayMetatable(L: number): void {
    this.mod._lua_rawgeti(L, LUA_REGISTRYINDEX, BigInt(this.arrayMtRef));
  }

  // ---- JS -> Lua -----------------------------------------------------------------------------

  push(L: number, value: unknown, depth = 0): void {
    const mod = this.mod;
    switch (typeof value) {
      case 'string':
        this.mem.pushString(L, value);
        return;
      case 'number':
        if (
          Number.isInteger(value) &&
          value >= -9223372036854775808 &&
          value < 9223372036854775808
        ) {
          mod._lua_pushinteger(L, BigInt(value));
        } else {
          mod._lua_pushnumber(L, value);
        }
        return;
      case 'boolean':
        mod._lua_pushboolean(L, value ? 1 : 0);
        return;
      case 'bigint':
        mod._lua_pushinteger(L, BigInt.asIntN(64, value));
        return;
      case 'undefined':
        mod._lua_pushnil(L);
        return;
      case 'object':
        break;
      default:
        throw new BridgeError(`cannot pass a JS ${typeof value} to Lua`);
    }
    if (value === null) {
      mod._lua_pushlightuserdata(L, NULL_POINTER);
      return;
    }
    if (value instanceof Uint8Array) {
      this.mem.pushString(L, value);
      return;
    }
    if (depth >= MAX_DEPTH)
      throw new BridgeError(`value nested more than ${MAX_DEPTH} levels deep`);
    if (!mod._lua_checkstack(L, 4))
      throw new BridgeError('Lua stack overflow while converting a value');
    if (value instanceof WithMetatable) {
      this.push(L, value.value, depth);
      mod._lua_rawgeti(L, LUA_REGISTRYINDEX, BigInt(value.metatableRef));
      mod._lua_setmetatable(L, -2);
      return;
    }
    if (Array.isArray(value)) {
      const n = value.length;
      mod._lua_createtable(L, n, 0);
      for (let i = 0; i < n; i++) {
        // Fix (test/lua): null stays json.null inside arrays too, as docs/lua-api.md promises
        // (`decode('[1, null]')[2] == json.null`); pushing nil lost trailing nulls on a round trip.
        this.push(L, value[i], depth + 1);
        mod._lua_rawseti(L, -2, BigInt(i + 1));
      }
      this.pushArrayMetatable(L);
      mod._lua_setmetatable(L, -2);
      return;
    }
    const keys = Object.keys(value);
    mod._lua_createtable(L, 0, keys.length);
    for (const key of keys) {
      const v = (value as Record<string, unknown>)[key];
      if (v === undefined) continue;
      this.mem.pushString(L, key);
      this.push(L, v, depth + 1);
      mod._lua_rawset(L, -3);
    }
  }

  // ---- Lua -> JS -----------------------------------------------------------------------------

  /** Reads the value at `idx` (any index form) without changing the stack. */
  read(L: number, idx: number, opts?: ReadOptions): unknown {
    const abs = idx < 0 && idx > LUA_REGISTRYINDEX ? this.mod._lua_gettop(L) + idx + 1 : idx;
    this.maxBytes = opts?.maxBytes ?? DEFAULT_MAX_READ_BYTES;
    this.left = this.maxBytes;
    return this.readAt(L, abs, opts, 0, '', undefined);
  }

  private charge(bytes: number, path: string): void {
    this.left -= bytes;
    if (this.left < 0) {
      throw new BridgeSizeError(
        `value too large: more than ${this.maxBytes} bytes${path ? ` (at '${path}')` : ''}`,
        this.maxBytes,
      );
    }
  }

  private readAt(
    L: number,
    idx: number,
    opts: ReadOptions | undefined,
    depth: number,
    path: string,
    seen: Set<number> | undefined,
  ): unknown {
    const mod = this.mod;
    // Every value costs a little, so a table of a million small values is charged too.
    this.charge(8, path);
    switch (mod._lua_type(L, idx)) {
      case LuaType.None:
      case LuaType.Nil:
        return undefined;
      case LuaType.Boolean:
        return mod._lua_toboolean(L, idx) !== 0;
      case LuaType.Number:
        if (mod._lua_isinteger(L, idx)) return Number(mod._lua_tointegerx(L, idx, 0));
        return mod._lua_tonumberx(L, idx, 0);
      case LuaType.String: {
        // One string is bounded by the state's memory; many copies of it are what this stops.
        const v = this.mem.readString(L, idx);
        this.charge(typeof v === 'string' ? v.length : v.byteLength, path);
        return v;
      }
      case LuaType.LightUserdata:
        if (mod._lua_touserdata(L, idx) === NULL_POINTER) return null;
        return this.opaque(opts, 'light userdata', path);
      case LuaType.Table:
        return this.readTable(L, idx, opts, depth, path, seen);
      case LuaType.Function:
        return this.opaque(opts, 'function', path);
      case LuaType.Thread:
        return this.opaque(opts, 'thread', path);
      default:
        return this.opaque(opts, 'userdata', path);
    }
  }

  private opaque(opts: ReadOptions | undefined, what: string, path: string): undefined {
    if (opts?.opaque === 'skip') return undefined;
    throw new BridgeError(`cannot convert a ${what}${path ? ` at '${path}'` : ''} to JSON`);
  }

  private readTable(
    L: number,
    idx: number,
    opts: ReadOptions | undefined,
    depth: number,
    path: string,
    seen: Set<number> | undefined,
  ): unknown {
    const mod = this.mod;
    const maxDepth = opts?.maxDepth ?? MAX_DEPTH;
    if (depth >= maxDepth) {
      throw new BridgeError(
        `table nested more than ${maxDepth} levels deep${path ? ` at '${path}'` : ''}`,
      );
    }
    const ptr = mod._lua_topointer(L, idx);
    const visiting = seen ?? new Set<number>();
    if (visiting.has(ptr))
      throw new BridgeError(`table contains a cycle${path ? ` at '${path}'` : ''}`);
    visiting.add(ptr);
    if (!mod._lua_checkstack(L, 4))
      throw new BridgeError('Lua stack overflow while converting a value');

    let marked = false;
    if (mod._lua_getmetatable(L, idx)) {
      this.pushArrayMetatable(L);
      marked = mod._lua_rawequal(L, -1, -2) !== 0;
      mod._lua_settop(L, -3);
    }

    const keys: (string | number)[] = [];
    const values: unknown[] = [];
    let allPositiveInts = true;
    let maxIndex = 0;
    mod._lua_pushnil(L);
    try {
      while (mod._lua_next(L, idx) !== 0) {
        // stack: ... key value
        const keyType = mod._lua_type(L, -2);
        let key: string | number;
        if (keyType === LuaType.Number && mod._lua_isinteger(L, -2)) {
          key = Number(mod._lua_tointegerx(L, -2, 0));
          if (key < 1) allPositiveInts = false;
          else if (key > maxIndex) maxIndex = key;
        } else if (keyType === LuaType.String) {
          // Read without lua_tolstring converting anything: the key is already a string.
          const k = this.mem.readString(L, -2);
          key = typeof k === 'string' ? k : new TextDecoder().decode(k);
          allPositiveInts = false;
        } else if (keyType === LuaType.Number) {
          key = mod._lua_tonumberx(L, -2, 0);
          allPositiveInts = false;
        } else if (keyType === LuaType.Boolean) {
          key = mod._lua_toboolean(L, -2) ? 'true' : 'false';
          allPositiveInts = false;
        } else {
          mod._lua_settop(L, -2);
          if (opts?.opaque === 'skip') continue;
          throw new BridgeError(`table key of unsupported type${path ? ` at '${path}'` : ''}`);
        }
        const childPath = path ? `${path}.${key}` : String(key);
        values.push(this.readAt(L, mod._lua_gettop(L), opts, depth + 1, childPath, visiting));
        keys.push(key);
        mod._lua_settop(L, -2);
      }
    } finally {
      // On a throw, lua_next's key/value stay on the stack: the caller restores its top.
      visiting.delete(ptr);
    }

    return shapeTable(keys, values, allPositiveInts && marked, allPositiveInts, maxIndex, path);
  }
}

// Why a separate function: readTable walks the Lua stack; this only decides, from what the
// walk found, whether the table becomes a JSON array or an object.
function shapeTable(
  keys: (string | number)[],
  values: unknown[],
  markedArray: boolean,
  allPositiveInts: boolean,
  maxIndex: number,
  path: string,
): unknown {
  const n = keys.length;
  if (markedArray && maxIndex - n > Math.max(n, MAX_ARRAY_HOLES)) {
    throw new BridgeSizeError(
      `sparse array: index ${maxIndex} set with only ${n} value${n === 1 ? '' : 's'}${path ? ` at '${path}'` : ''} (an array may have at most ${MAX_ARRAY_HOLES} holes, or as many as it has values)`,
      MAX_ARRAY_HOLES,
    );
  }
  if (markedArray || (allPositiveInts && n > 0 && maxIndex <= n * 2)) {
    const out: unknown[] = new Array(maxIndex).fill(null);
    for (let i = 0; i < n; i++) {
      const v = values[i];
      out[(keys[i] as number) - 1] = v === undefined ? null : v;
    }
    return out;
  }
  const obj: Record<string, unknown> = {};
  for (let i = 0; i < n; i++) {
    const v = values[i];
    if (v !== undefined) obj[String(keys[i])] = v;
  }
  return obj;
}
