/**
 * What the context functions (context-notices.ts, context-requests.ts) share: the live call a
 * context table names, and checks of their Lua arguments.
 */
import { LuaArgumentError } from '../lua/errors.js';
import type { CallContext } from '../registry/types.js';

export interface LiveCall {
  ctx: CallContext;
  /** The last progress value sent, so a step backwards is refused. */
  progress: number | undefined;
  /** Per-kind counters for default input keys (`elicit_1`, `sample_1`, ...). */
  seq: Record<string, number> | undefined;
}

/** Finds the live call behind a context table's `call_id`, or raises for `context.<fname>`. */
export type LiveLookup = (id: unknown, fname: string) => LiveCall;

export function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Uint8Array);
}

export function typeName(v: unknown): string {
  if (v === undefined) return 'nil';
  if (v === null) return 'userdata';
  if (v instanceof Uint8Array) return 'string';
  if (typeof v === 'object') return 'table';
  return typeof v;
}

export function specTable(v: unknown, fname: string): Record<string, unknown> {
  if (isObject(v)) return v;
  // An empty Lua table reads as an empty array.
  if (Array.isArray(v) && v.length === 0) return {};
  throw new LuaArgumentError(`bad argument #1 to '${fname}' (table expected, got ${typeName(v)})`);
}
