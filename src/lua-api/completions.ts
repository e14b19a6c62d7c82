/**
 * `complete` handlers in Lua: a prompt argument's `complete = function(value, args, context)`
 * and a resource template's `complete = { var = function(value, args, context) }` answer
 * `completion/complete`. They return an array of strings or `{values, total, has_more}`.
 */
import type { HostCall, LuaState } from '../lua/state.js';
import type { CompleteHandler, CompletionResult } from '../registry/types.js';
import { callWithContext } from './context.js';

/** MCP caps one completion answer at 100 values. */
const MAX_VALUES = 100;

/**
 * Registry references of the completion functions in a `mcp.prompt` schema (argument 2's
 * `arguments[i].complete`) or a `mcp.resource` schema (`complete[var]` for each template var).
 */
export function completerRefs(
  call: HostCall,
  names: string[],
  pathOf: (name: string, i: number) => (string | number)[],
): Map<string, number> | undefined {
  let refs: Map<string, number> | undefined;
  names.forEach((name, i) => {
    const ref = call.refPath(2, pathOf(name, i));
    if (ref !== undefined) (refs ??= new Map()).set(name, ref);
  });
  return refs;
}

export function luaCompleter(
  state: LuaState,
  refs: Map<string, number> | undefined,
  timeoutMs: number | undefined,
): CompleteHandler | undefined {
  if (refs === undefined) return undefined;
  return async (argument, value, context, ctx) => {
    const ref = refs.get(argument);
    if (ref === undefined) return { values: [] };
    const [out] = await callWithContext(state, ref, [value, context], ctx, {
      timeoutMs,
      signal: ctx.signal,
    });
    return toCompletion(out);
  };
}

function toCompletion(out: unknown): CompletionResult {
  let values: unknown[] = [];
  let total: unknown;
  let hasMore: unknown;
  if (Array.isArray(out)) values = out;
  else if (typeof out === 'object' && out !== null && !(out instanceof Uint8Array)) {
    const o = out as Record<string, unknown>;
    values = Array.isArray(o.values) ? o.values : [];
    total = o.total;
    hasMore = o.has_more ?? o.hasMore;
  } else if (out !== undefined) {
    throw new Error('a complete handler must return an array of strings or {values = {...}}');
  }
  const strings = values.filter((v): v is string => typeof v === 'string');
  const result: CompletionResult = { values: strings.slice(0, MAX_VALUES) };
  if (typeof total === 'number') result.total = total;
  else if (strings.length > MAX_VALUES) result.total = strings.length;
  if (typeof hasMore === 'boolean') result.hasMore = hasMore;
  else if (strings.length > MAX_VALUES) result.hasMore = true;
  return result;
}
