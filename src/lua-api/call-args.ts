/**
 * The argument ceilings of `mcp.call` (LUA_API §3.1), checked before a call starts so a refused
 * call never reaches its tool. Each refusal names the argument (its dotted path), its size and
 * the ceiling.
 */
import { BridgeError } from '../lua/bridge.js';
import type { LuaState } from '../lua/state.js';

export const CALL_LIMITS = {
  /** Bytes in one string. */
  stringBytes: 16 * 1024 * 1024,
  /** Keyed (non-sequence) entries in one table. */
  keyedEntries: 4096,
  /** Sequence items in one table. */
  sequenceItems: 262144,
  /** Tables nested in one another, the arguments table included. */
  depth: 64,
} as const;

export type CheckedArgs =
  { ok: true; args: Record<string, unknown> } | { ok: false; reason: string };

function refuse(reason: string): CheckedArgs {
  return { ok: false, reason: `mcp.call refused: ${reason}` };
}

function argName(path: string): string {
  return path === '' ? 'args' : `argument '${path}'`;
}

/** Walks a JS value (from the bridge or JSON.parse); undefined when it is within the limits. */
export function findOverLimit(value: unknown, path = '', depth = 1): string | undefined {
  if (typeof value === 'string') {
    // A string has between length and 3*length UTF-8 bytes: count only when it matters.
    if (value.length * 3 > CALL_LIMITS.stringBytes) {
      const bytes = Buffer.byteLength(value, 'utf8');
      if (bytes > CALL_LIMITS.stringBytes) {
        return `${argName(path)} is a string of ${bytes} bytes; the ceiling is ${CALL_LIMITS.stringBytes} bytes (16 MiB)`;
      }
    }
    return undefined;
  }
  if (value instanceof Uint8Array) {
    return `${argName(path)} is a string of ${value.length} bytes that is not UTF-8 text; only UTF-8 text can travel as JSON (send binary data base64-encoded)`;
  }
  if (typeof value !== 'object' || value === null) return undefined;
  if (depth > CALL_LIMITS.depth) {
    return `${argName(path)} is nested ${depth} tables deep; the ceiling is ${CALL_LIMITS.depth}`;
  }
  if (Array.isArray(value)) {
    if (value.length > CALL_LIMITS.sequenceItems) {
      return `${argName(path)} is a table with ${value.length} sequence items; the ceiling is ${CALL_LIMITS.sequenceItems}`;
    }
    for (let i = 0; i < value.length; i++) {
      const problem = findOverLimit(value[i], path ? `${path}.${i + 1}` : String(i + 1), depth + 1);
      if (problem) return problem;
    }
    return undefined;
  }
  const keys = Object.keys(value);
  if (keys.length > CALL_LIMITS.keyedEntries) {
    return `${argName(path)} is a table with ${keys.length} keyed entries; the ceiling is ${CALL_LIMITS.keyedEntries}`;
  }
  for (const key of keys) {
    const problem = findOverLimit(
      (value as Record<string, unknown>)[key],
      path ? `${path}.${key}` : key,
      depth + 1,
    );
    if (problem) return problem;
  }
  return undefined;
}

function asObject(value: unknown, what: string): CheckedArgs {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    const kind = Array.isArray(value) ? 'an array' : value === null ? 'null' : `a ${typeof value}`;
    return refuse(`${what} holds ${kind}; a tool's arguments are an object`);
  }
  const problem = findOverLimit(value);
  if (problem) return refuse(problem);
  return { ok: true, args: value as Record<string, unknown> };
}

/**
 * Reads and checks argument `index` of the running host call: nil (no arguments), a table, or a
 * JSON object text parsed as it stands.
 */
export function readCallArgs(state: LuaState, L: number, index: number, type: string): CheckedArgs {
  if (type === 'nil' || type === 'no value') return { ok: true, args: {} };
  if (type === 'string') {
    const text = state.bridge.read(L, index);
    if (text instanceof Uint8Array) {
      return refuse(
        `args is a string of ${text.length} bytes that is not UTF-8 text, so it is not JSON`,
      );
    }
    const s = text as string;
    let parsed: unknown;
    try {
      parsed = JSON.parse(s);
    } catch (err) {
      return refuse(
        `args is a string of ${Buffer.byteLength(s, 'utf8')} bytes that is not JSON (${(err as Error).message}); pass a table or a JSON object text`,
      );
    }
    return asObject(parsed, 'the JSON text in args');
  }
  if (type !== 'table') {
    return refuse(`args is a ${type}; a table or a JSON object text is expected`);
  }
  let value: unknown;
  try {
    value = state.bridge.read(L, index, { maxDepth: CALL_LIMITS.depth });
  } catch (err) {
    if (!(err instanceof BridgeError)) throw err;
    const deep = /nested more than \d+ levels deep(?: at '(.*)')?$/.exec(err.message);
    if (deep) {
      const path = deep[1] ?? '';
      return refuse(
        `${argName(path)} is nested ${CALL_LIMITS.depth + 1} tables deep; the ceiling is ${CALL_LIMITS.depth}`,
      );
    }
    return refuse(`args cannot travel as JSON: ${err.message}`);
  }
  return asObject(value, 'args');
}
