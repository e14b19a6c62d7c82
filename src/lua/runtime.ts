/**
 * What one wasm module shares among its Lua states: the single C trampoline through which Lua
 * calls JS functions, the count hook that enforces time and instruction limits, the allocator
 * that enforces each state's memory ceiling, and the record of which call is running right now
 * (Lua runs synchronously on the JS thread, so at most one is).
 */
import { moduleMemory, type ModuleMemory } from './memory.js';
import { LUA_MASKCOUNT, upvalueIndex, type LuaModule } from './wasm.js';
import { limitMessage, type LuaLimit } from './errors.js';

/** A JS function callable from Lua: reads its arguments from L, pushes results, returns their count. */
export type RawFunction = (L: number, nargs: number) => number;

interface FunctionSlot {
  fn: RawFunction;
  /** Stack level whose position prefixes a raised error (2 when a Lua wrapper sits between). */
  whereLevel: number;
}

/** The per-call state the hook and allocator consult. */
export interface ActiveCall {
  deadline: number;
  timeoutMs: number;
  budget: number;
  instructions: number;
  /** Set once a limit is broken; the hook keeps raising it until the call ends. */
  killed: { limit: LuaLimit; message: string } | undefined;
  /** Main thread of the call, to make the hook fire at every instruction once killed. */
  thread: number;
  memoryOwner: MemoryAccount;
}

export interface MemoryAccount {
  used: number;
  max: number;
}

/** Instructions between two hook runs: cheap (FIELD-NOTES: 10^4 costs little) yet responsive. */
export const HOOK_EVERY = 10_000;

/**
 * Setup chunks (the prelude, the fixed Lua halves of the API) kept as bytecode per module. Their
 * sources are constants, so a handful suffice; the bound only guards against a caller passing
 * varying text to `exec`.
 */
export const MAX_SETUP_CHUNKS = 64;

/** A setup chunk's bytecode, in module memory for the module's life (like interned names). */
export interface CompiledChunk {
  ptr: number;
  size: number;
}

export class LuaRuntime {
  readonly mod: LuaModule;
  readonly mem: ModuleMemory;
  readonly trampoline: number;
  readonly hook: number;
  readonly allocator: number;
  private readonly functions: (FunctionSlot | undefined)[] = [];
  private readonly freeSlots: number[] = [];
  private readonly accounts: (MemoryAccount | undefined)[] = [];
  private readonly freeAccounts: number[] = [];
  active: ActiveCall | undefined;
  private refused = -1;
  /**
   * Why: compiling the 110-line prelude took ~180-350 µs of the ~500 µs a new state cost (an
   * execute run makes one state per run); loading its bytecode takes ~30 µs. Only our own
   * constant chunks are kept: user code is always loaded as text.
   */
  private readonly setupChunks = new Map<string, CompiledChunk>();
  private dumpWriter = 0;
  private dumpParts: Uint8Array[] = [];
  /**
   * Scripts (execute's user text) compiled here before, by chunk name and text, least recently
   * used first: a script sent again loads from bytecode this module's compiler made from that very
   * text, never from bytes anybody sent. Bounded by `scriptBytes` (bytecode plus text).
   */
  private readonly scripts = new Map<string, CompiledChunk>();
  private scriptBytes = 0;

  constructor(mod: LuaModule) {
    this.mod = mod;
    this.mem = moduleMemory(mod);
    this.trampoline = mod.addFunction((L: number) => this.dispatch(L), 'ii');
    this.hook = mod.addFunction((L: number) => this.onHook(L), 'vii');
    this.allocator = mod.addFunction(
      (ud: number, ptr: number, osize: number, nsize: number) =>
        this.allocate(ud, ptr, osize, nsize),
      'iiiii',
    );
  }

  // ---- functions -----------------------------------------------------------------------------

  addFunction(fn: RawFunction, whereLevel = 1): number {
    const id = this.freeSlots.pop() ?? this.functions.length;
    this.functions[id] = { fn, whereLevel };
    return id;
  }

  removeFunction(id: number): void {
    if (this.functions[id]) {
      this.functions[id] = undefined;
      this.freeSlots.push(id);
    }
  }

  /** Pushes a Lua closure that calls function `id` through the trampoline. */
  pushFunction(L: number, id: number): void {
    this.mod._lua_pushnumber(L, id);
    this.mod._lua_pushcclosure(L, this.trampoline, 1);
  }

  private dispatch(L: number): number {
    const mod = this.mod;
    let slot: FunctionSlot | undefined;
    try {
      slot = this.functions[mod._lua_tonumberx(L, upvalueIndex(1), 0)];
      if (!slot) throw new Error('host function no longer exists (its plugin was unloaded)');
      return slot.fn(L, mod._lua_gettop(L));
    } catch (err) {
      // A Lua error raised inside a nested Lua call unwinds as emscripten's longjmp: let it pass.
      if (err === Infinity) throw err;
      mod._lua_settop(L, 0);
      mod._luaL_where(L, slot?.whereLevel ?? 1);
      this.mem.pushString(L, err instanceof Error ? err.message : String(err));
      mod._lua_concat(L, 2);
    }
    return mod._lua_error(L);
  }

  // ---- setup chunks --------------------------------------------------------------------------

  setupChunk(key: string): CompiledChunk | undefined {
    return this.setupChunks.get(key);
  }

  /**
   * Keeps the function on top of L's stack (just compiled from one of our setup sources) as
   * bytecode under `key`; the stack is left as it was. Debug info stays, so error positions
   * read the same as from the text.
   */
  rememberSetupChunk(L: number, key: string): void {
    if (this.setupChunks.size >= MAX_SETUP_CHUNKS || this.setupChunks.has(key)) return;
    const chunk = this.dumpTop(L, Infinity);
    if (chunk !== undefined) this.setupChunks.set(key, chunk);
  }

  /** A script compiled before under `key` (it becomes the most recently used). */
  scriptChunk(key: string): CompiledChunk | undefined {
    const hit = this.scripts.get(key);
    if (hit !== undefined) {
      this.scripts.delete(key);
      this.scripts.set(key, hit);
    }
    return hit;
  }

  /**
   * Keeps the function on top of L's stack (just compiled from the script text in `key`) as
   * bytecode, the least recently used going first past `maxBytes`; a script bigger than that
   * alone is not kept. The stack is left as it was.
   */
  rememberScriptChunk(L: number, key: string, maxBytes: number): void {
    if (this.scripts.has(key)) return;
    const chunk = this.dumpTop(L, maxBytes - key.length);
    if (chunk === undefined) return;
    const cost = chunk.size + key.length;
    for (const [k, c] of this.scripts) {
      if (this.scriptBytes + cost <= maxBytes) break;
      this.scripts.delete(k);
      this.mod._free(c.ptr);
      this.scriptBytes -= c.size + k.length;
    }
    this.scripts.set(key, chunk);
    this.scriptBytes += cost;
  }

  /** The function on top of L's stack as bytecode in module memory (undefined past maxBytes). */
  private dumpTop(L: number, maxBytes: number): CompiledChunk | undefined {
    const mod = this.mod;
    this.dumpWriter ||= mod.addFunction((_L: number, p: number, size: number) => {
      this.dumpParts.push(mod.HEAPU8.slice(p, p + size));
      return 0;
    }, 'iiiii');
    this.dumpParts = [];
    const status = mod._lua_dump(L, this.dumpWriter, 0, 0);
    const parts = this.dumpParts;
    this.dumpParts = [];
    if (status !== 0) return;
    let size = 0;
    for (const part of parts) size += part.length;
    if (size > maxBytes) return;
    const ptr = mod._malloc(size);
    if (!ptr) return;
    let at = ptr;
    for (const part of parts) {
      mod.HEAPU8.set(part, at);
      at += part.length;
    }
    return { ptr, size };
  }

  // ---- limits --------------------------------------------------------------------------------

  private onHook(L: number): void {
    const call = this.active;
    if (!call) return;
    if (!call.killed) {
      call.instructions += HOOK_EVERY;
      if (call.instructions > call.budget) {
        call.killed = { limit: 'instructions', message: limitMessage('instructions', call.budget) };
      } else if (performance.now() > call.deadline) {
        call.killed = { limit: 'timeout', message: limitMessage('timeout', call.timeoutMs) };
      } else {
        return;
      }
      // From now on fire at every instruction, so a pcall loop cannot outlive the kill.
      this.mod._lua_sethook(call.thread, this.hook, LUA_MASKCOUNT, 1);
    }
    this.mod._lua_sethook(L, this.hook, LUA_MASKCOUNT, 1);
    this.mem.pushString(L, call.killed.message);
    this.mod._lua_error(L);
  }

  newAccount(max: number): number {
    const ud = this.freeAccounts.pop() ?? this.accounts.length;
    this.accounts[ud] = { used: 0, max };
    return ud;
  }

  account(ud: number): MemoryAccount {
    return this.accounts[ud] as MemoryAccount;
  }

  releaseAccount(ud: number): void {
    this.accounts[ud] = undefined;
    this.freeAccounts.push(ud);
  }

  private allocate(ud: number, ptr: number, osize: number, nsize: number): number {
    const mod = this.mod;
    const acc = this.accounts[ud];
    if (nsize === 0) {
      if (ptr) {
        if (acc) acc.used -= osize;
        mod._free(ptr);
      }
      return 0;
    }
    const delta = ptr ? nsize - osize : nsize;
    if (acc && delta > 0 && acc.used + delta > acc.max) {
      // Lua answers a refusal with a full GC and asks again: only a second refusal of the same
      // request means the state is really full.
      const key = ptr * 4294967296 + nsize;
      const call = this.active;
      if (this.refused === key && call && call.memoryOwner === acc && !call.killed) {
        call.killed = { limit: 'memory', message: limitMessage('memory', acc.max) };
      }
      this.refused = key;
      return 0;
    }
    this.refused = -1;
    const out = mod._realloc(ptr, nsize);
    if (out && acc) acc.used += delta;
    return out;
  }
}

const runtimes = new WeakMap<LuaModule, LuaRuntime>();

export function runtimeFor(mod: LuaModule): LuaRuntime {
  let rt = runtimes.get(mod);
  if (!rt) {
    rt = new LuaRuntime(mod);
    runtimes.set(mod, rt);
  }
  return rt;
}
