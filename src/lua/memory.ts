/**
 * Moving bytes in and out of the module's linear memory: a reusable scratch buffer for strings
 * going into Lua, interned C strings for names, and reading Lua strings out as JS strings (or as
 * bytes when they are not UTF-8).
 */
import type { LuaModule } from './wasm.js';

const encoder = new TextEncoder();
const strictDecoder = new TextDecoder('utf-8', { fatal: true });

export class ModuleMemory {
  readonly mod: LuaModule;
  /** 16 bytes for out-parameters (string lengths, result counts). */
  readonly out: number;
  private scratch = 0;
  private scratchCap = 0;
  private readonly cstrings = new Map<string, number>();

  constructor(mod: LuaModule) {
    this.mod = mod;
    this.out = mod._malloc(16);
  }

  /** A NUL-terminated copy of `s` that lives as long as the module (for a small set of names). */
  cstr(s: string): number {
    let p = this.cstrings.get(s);
    if (p === undefined) {
      const bytes = encoder.encode(s);
      p = this.mod._malloc(bytes.length + 1);
      this.mod.HEAPU8.set(bytes, p);
      this.mod.HEAPU8[p + bytes.length] = 0;
      this.cstrings.set(s, p);
    }
    return p;
  }

  private reserve(n: number): number {
    if (n > this.scratchCap) {
      if (this.scratch) this.mod._free(this.scratch);
      this.scratchCap = Math.max(n, 256, this.scratchCap * 2);
      this.scratch = this.mod._malloc(this.scratchCap);
      if (!this.scratch) {
        this.scratchCap = 0;
        throw new Error(`out of memory copying ${n} bytes into Lua`);
      }
    }
    return this.scratch;
  }

  /** Pushes a JS string (as UTF-8) or raw bytes onto L's stack. */
  pushString(L: number, s: string | Uint8Array): void {
    const mod = this.mod;
    if (typeof s !== 'string') {
      const p = this.reserve(s.length);
      mod.HEAPU8.set(s, p);
      mod._lua_pushlstring(L, p, s.length);
      return;
    }
    const n = s.length;
    // ASCII fast path: one byte per UTF-16 unit, no encoder call.
    if (n < 256) {
      const p = this.reserve(n * 3);
      const heap = mod.HEAPU8;
      let i = 0;
      for (; i < n; i++) {
        const c = s.charCodeAt(i);
        if (c >= 0x80) break;
        heap[p + i] = c;
      }
      if (i === n) {
        mod._lua_pushlstring(L, p, n);
        return;
      }
    }
    const max = n * 3;
    const p = this.reserve(max);
    const { written } = encoder.encodeInto(s, mod.HEAPU8.subarray(p, p + max));
    mod._lua_pushlstring(L, p, written);
  }

  /** Reads the string (or number, converted in place by Lua) at idx. */
  readString(L: number, idx: number): string | Uint8Array {
    const mod = this.mod;
    const p = mod._lua_tolstring(L, idx, this.out);
    const len = mod.HEAPU32[this.out >> 2] as number;
    const heap = mod.HEAPU8;
    if (len < 64) {
      let ascii = true;
      for (let i = 0; i < len; i++) {
        if ((heap[p + i] as number) >= 0x80) {
          ascii = false;
          break;
        }
      }
      if (ascii)
        return String.fromCharCode.apply(null, heap.subarray(p, p + len) as unknown as number[]);
    }
    const bytes = heap.subarray(p, p + len);
    try {
      return strictDecoder.decode(bytes);
    } catch {
      return bytes.slice();
    }
  }

  /** Reads a string as text, replacing bytes that are not UTF-8 (for messages and names). */
  readText(L: number, idx: number): string {
    const v = this.readString(L, idx);
    return typeof v === 'string' ? v : new TextDecoder().decode(v);
  }
}

const memories = new WeakMap<LuaModule, ModuleMemory>();

export function moduleMemory(mod: LuaModule): ModuleMemory {
  let m = memories.get(mod);
  if (!m) {
    m = new ModuleMemory(mod);
    memories.set(mod, m);
  }
  return m;
}
