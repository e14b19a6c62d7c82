/**
 * The plain types and defaults of a Lua state's options and calls, apart from the state itself so
 * the modules that build calls (call-guard.ts, and the state) share them without a cycle.
 * state.ts re-exports every name here.
 */
import type { LuaModule } from './wasm.js';

/** Several values returned to Lua (or resumed with) at once. */
export class LuaMulti {
  constructor(readonly values: unknown[]) {}
}

export interface LuaStateOptions {
  /** Names the state in messages (a plugin name, "script"). */
  name: string;
  /** Memory ceiling in bytes (default 64 MiB). */
  memoryLimit?: number;
  /** Where `print` output goes. */
  print?: (text: string) => void;
  /** Finds a module for `require`: its source and chunk name, or an error message. */
  findModule?: (name: string) => { source: string | Uint8Array; chunkname: string } | string;
  module?: LuaModule;
}

export interface CallLimits {
  timeoutMs?: number;
  instructions?: number;
  signal?: AbortSignal;
  /**
   * What this call is for, opaque to the state: host functions read it back as
   * `state.activeTag` while the call runs (a handler's call context, so a nested tool call made
   * from Lua knows whose call it belongs to).
   */
  tag?: unknown;
  /** Bytes each returned value may take once read into JS (a BridgeSizeError past it). */
  resultBytes?: number;
}

export const DEFAULT_MEMORY_LIMIT = 64 * 1024 * 1024;
export const DEFAULT_TIMEOUT_MS = 5000;
export const DEFAULT_INSTRUCTIONS = 1_000_000_000;
