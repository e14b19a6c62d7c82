/**
 * Argument checks for Lua-facing functions, raising in the wording Lua's own libraries use
 * (`bad argument #1 to 'tool' (string expected, got nil)`), at the caller's line.
 */
import { LuaArgumentError } from '../lua/errors.js';
import { LuaType, luaTypeName as nameOf } from '../lua/wasm.js';
import type { HostCall } from '../lua/state.js';

export function luaTypeName(call: HostCall, i: number): string {
  return i > call.nargs ? 'no value' : nameOf(call.typeOf(i));
}

export function badArgument(
  i: number,
  fname: string,
  expected: string,
  call: HostCall,
): LuaArgumentError {
  return new LuaArgumentError(
    `bad argument #${i} to '${fname}' (${expected} expected, got ${luaTypeName(call, i)})`,
  );
}

export function checkString(args: unknown[], call: HostCall, i: number, fname: string): string {
  const v = args[i - 1];
  if (typeof v === 'string' && call.typeOf(i) === LuaType.String) return v;
  throw badArgument(i, fname, 'string', call);
}

export function optString(
  args: unknown[],
  call: HostCall,
  i: number,
  fname: string,
): string | undefined {
  if (i > call.nargs || call.typeOf(i) === LuaType.Nil) return undefined;
  return checkString(args, call, i, fname);
}

export function checkTable(
  args: unknown[],
  call: HostCall,
  i: number,
  fname: string,
): Record<string, unknown> | unknown[] {
  if (call.typeOf(i) === LuaType.Table) return (args[i - 1] ?? {}) as Record<string, unknown>;
  throw badArgument(i, fname, 'table', call);
}

export function optTable(
  args: unknown[],
  call: HostCall,
  i: number,
  fname: string,
): Record<string, unknown> | undefined {
  if (i > call.nargs || call.typeOf(i) === LuaType.Nil) return undefined;
  const t = checkTable(args, call, i, fname);
  return Array.isArray(t) ? {} : t;
}

export function checkFunction(call: HostCall, i: number, fname: string): void {
  if (call.typeOf(i) !== LuaType.Function) throw badArgument(i, fname, 'function', call);
}

export function checkNumber(args: unknown[], call: HostCall, i: number, fname: string): number {
  const v = args[i - 1];
  if (typeof v === 'number' && call.typeOf(i) === LuaType.Number) return v;
  throw badArgument(i, fname, 'number', call);
}
