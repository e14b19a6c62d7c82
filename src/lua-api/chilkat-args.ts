/**
 * Argument checks of chilkat's methods, in Lua's wording. Argument n of a method is stack slot
 * n + 2 (after the object and the method name) and `args[n + 1]`.
 */
import { LuaArgumentError } from '../lua/errors.js';
import type { HostCall } from '../lua/state.js';
import { LuaType, luaTypeName } from '../lua/wasm.js';

export function strArg(args: unknown[], call: HostCall, n: number, fname: string): string {
  const v = args[n + 1];
  if (typeof v === 'string' && call.typeOf(n + 2) === LuaType.String) return v;
  if (call.typeOf(n + 2) === LuaType.Number) return String(v);
  throw new LuaArgumentError(
    `bad argument #${n} to '${fname}' (string expected, got ${gotName(call, n)})`,
  );
}

export function intArg(args: unknown[], call: HostCall, n: number, fname: string): number {
  const v = args[n + 1];
  if (typeof v !== 'number' || call.typeOf(n + 2) !== LuaType.Number)
    throw new LuaArgumentError(
      `bad argument #${n} to '${fname}' (number expected, got ${gotName(call, n)})`,
    );
  if (!Number.isInteger(v))
    throw new LuaArgumentError(
      `bad argument #${n} to '${fname}' (number has no integer representation)`,
    );
  if (Math.abs(v) > 2 ** 31 - 1)
    throw new LuaArgumentError(`bad argument #${n} to '${fname}' (integer out of range)`);
  return v;
}

export function boolArg(args: unknown[], call: HostCall, n: number, fname: string): boolean {
  const v = args[n + 1];
  if (typeof v === 'boolean') return v;
  throw new LuaArgumentError(
    `bad argument #${n} to '${fname}' (boolean expected, got ${gotName(call, n)})`,
  );
}

/** Lua's name for the type of explicit argument n (stack slot n + 2, after id and method). */
function gotName(call: HostCall, n: number): string {
  return n + 2 <= call.nargs ? luaTypeName(call.typeOf(n + 2)) : 'no value';
}
