/**
 * The hot messages between the hub's thread and a plugin's worker (a call and its result) go as
 * one JSON string when JSON carries them exactly: `postMessage` copies a string with one memcpy,
 * where its structured clone walks every property (measured: ~2x the cost of JSON.stringify +
 * JSON.parse for a tools/call's message). Anything JSON would change (a byte string from Lua, NaN,
 * -0, `undefined` in an array, a class instance, very deep nesting) keeps the structured clone.
 */

import { RAW_JSON } from '../registry/raw-json.js';

/** The deepest value checked; deeper ones go by structured clone (no recursion limit issue). */
const MAX_DEPTH = 64;

/** Whether JSON.parse(JSON.stringify(v)) gives back what structured clone would. */
export function jsonExact(v: unknown, depth = 0): boolean {
  switch (typeof v) {
    case 'string':
    case 'boolean':
      return true;
    case 'number':
      return Number.isFinite(v) && !Object.is(v, -0);
    case 'object': {
      if (v === null) return true;
      if (depth >= MAX_DEPTH) return false;
      if (Array.isArray(v)) {
        // A hole reads as undefined, which JSON turns into null: refused below.
        for (let i = 0; i < v.length; i++) if (!jsonExact(v[i], depth + 1)) return false;
        return true;
      }
      const proto = Object.getPrototypeOf(v) as unknown;
      if (proto !== Object.prototype && proto !== null) return false;
      const o = v as Record<string, unknown>;
      for (const k in o) if (!jsonExact(o[k], depth + 1)) return false;
      return true;
    }
    default:
      return false;
  }
}

/** What goes on the port for a message: its JSON when exact, else the message itself. */
export function encode<T extends object>(msg: T, exact: boolean): T | string {
  if (!exact) return msg;
  try {
    return JSON.stringify(msg);
  } catch {
    // Too large for one string: the structured clone (and its refusal) decide.
    return msg;
  }
}

/** A message as it came off the port. */
export function decode<T>(msg: T | string): T {
  return typeof msg === 'string' ? (JSON.parse(msg) as T) : msg;
}

/** How every successful result the worker sends as JSON starts (resultText). */
const RESULT_HEAD = '{"type":"result","id":';
const VALUE_KEY = ',"value":';

/**
 * A successful call's result message as JSON, its value last so the hub can cut the value's
 * text out of it (valueText) and pass it on without serialising it again. `value` must be
 * jsonExact.
 */
export function resultText(id: number, value: unknown, memory: number | undefined): string {
  const head =
    RESULT_HEAD + id + ',"ok":true' + (memory === undefined ? '' : ',"memory":' + memory);
  return head + VALUE_KEY + JSON.stringify(value) + '}';
}

/**
 * The JSON text of the value of a result message that resultText made, else undefined. The
 * members before the value are numbers and `true`, so the first `,"value":` is its key (a `,"`
 * never occurs inside a JSON string, where every quote is escaped).
 */
export function valueText(msg: string): string | undefined {
  if (!msg.startsWith(RESULT_HEAD)) return undefined;
  const at = msg.indexOf(VALUE_KEY, RESULT_HEAD.length);
  if (at === -1) return undefined;
  const head = msg.slice(RESULT_HEAD.length, at);
  // Only resultText's members: id, ok true, memory (an error result has no value member).
  if (!/^\d+,"ok":true(?:,"memory":\d+)?$/.test(head)) return undefined;
  return msg.slice(at + VALUE_KEY.length, -1);
}

/**
 * Marks a tool result parsed from a result message with its value's text (`RAW_JSON`), which the
 * dispatcher splices into the answer instead of serialising the object: only a plain object
 * without `_meta` (the dispatcher merges its own into that one).
 */
export function markRaw(value: unknown, text: string): void {
  if (typeof value !== 'object' || value === null || Array.isArray(value) || '_meta' in value)
    return;
  Object.defineProperty(value, RAW_JSON, { value: text });
}
