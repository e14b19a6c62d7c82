/**
 * The hot messages between the hub's thread and a plugin's worker (a call and its result) go as
 * one JSON string when JSON carries them exactly: `postMessage` copies a string with one memcpy,
 * where its structured clone walks every property (measured: ~2x the cost of JSON.stringify +
 * JSON.parse for a tools/call's message). Anything JSON would change (a byte string from Lua, NaN,
 * -0, `undefined` in an array, a class instance, very deep nesting) keeps the structured clone.
 */

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
