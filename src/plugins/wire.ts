/**
 * The hot messages between the hub's thread and a plugin's worker (a call and its result) go as
 * one JSON string when JSON carries them exactly: `postMessage` copies a string with one memcpy,
 * where its structured clone walks every property (measured: ~2x the cost of JSON.stringify +
 * JSON.parse for a tools/call's message). Anything JSON would change (a byte string from Lua, NaN,
 * -0, `undefined` in an array, a class instance, very deep nesting) keeps the structured clone.
 */

import { RAW_JSON } from '../registry/raw-json.js';
import type { ToWorker } from './worker-protocol.js';

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

type Invoke = Extract<ToWorker, { type: 'invoke' }>;
const INVOKE_HEAD = '{"type":"invoke","id":';

/**
 * Whether JSON carries a call's message exactly. The members besides input, rid, complete and
 * a context sent whole are ids and names, exact by construction.
 */
export function invokeExact(msg: Invoke): boolean {
  return (
    jsonExact(msg.input) &&
    (msg.ctx === undefined || jsonExact(msg)) &&
    (msg.complete === undefined || jsonExact(msg.complete)) &&
    (msg.rid === undefined || jsonExact(msg.rid))
  );
}

/**
 * A call's message as encode makes it when `exact`, the members written one by one (the same
 * JSON as JSON.stringify of the message, without its pass over the message object).
 */
export function encodeInvoke(msg: Invoke, exact: boolean): Invoke | string {
  if (!exact) return msg;
  try {
    let out =
      INVOKE_HEAD + msg.id + ',"kind":"' + msg.kind + '","name":' + JSON.stringify(msg.name);
    out += ',"input":' + JSON.stringify(msg.input);
    if (msg.cx !== undefined) out += ',"cx":' + msg.cx;
    if (msg.rid !== undefined) out += ',"rid":' + JSON.stringify(msg.rid);
    if (msg.uri !== undefined) out += ',"uri":' + JSON.stringify(msg.uri);
    if (msg.ctx !== undefined) out += ',"ctx":' + JSON.stringify(msg.ctx);
    if (msg.peer !== undefined) out += ',"peer":' + JSON.stringify(msg.peer);
    if (msg.complete !== undefined) out += ',"complete":' + JSON.stringify(msg.complete);
    return out + '}';
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

/** A successful result message that resultText made, read without parsing its members. */
export interface ResultHead {
  id: number;
  memory: number | undefined;
  /** The JSON text of the value. */
  value: string;
}

/** The longest id or memory figure read (a safe integer's digits). */
const MAX_DIGITS = 15;
const OK_TRUE = ',"ok":true';
const MEMORY_KEY = ',"memory":';

/** The decimal digits at `at` (1 to 15 of them): [value, index after], or undefined. */
function digitsAt(msg: string, at: number): [number, number] | undefined {
  let n = 0;
  let i = at;
  for (; i < msg.length && i - at < MAX_DIGITS; i++) {
    const c = msg.charCodeAt(i) - 48;
    if (c < 0 || c > 9) break;
    n = n * 10 + c;
  }
  return i === at ? undefined : [n, i];
}

/**
 * The members of a result message that resultText made, else undefined (an error result, a
 * message of another type): the hub parses only the value's text, which it also passes on as it
 * is. The members before the value are numbers and `true`, read here without a JSON pass.
 */
export function resultHead(msg: string): ResultHead | undefined {
  if (!msg.startsWith(RESULT_HEAD) || msg.charCodeAt(msg.length - 1) !== 125 /* } */) return;
  const id = digitsAt(msg, RESULT_HEAD.length);
  if (id === undefined || !msg.startsWith(OK_TRUE, id[1])) return undefined;
  let at = id[1] + OK_TRUE.length;
  let memory: number | undefined;
  if (msg.startsWith(MEMORY_KEY, at)) {
    const m = digitsAt(msg, at + MEMORY_KEY.length);
    if (m === undefined) return undefined;
    memory = m[0];
    at = m[1];
  }
  if (!msg.startsWith(VALUE_KEY, at)) return undefined;
  return { id: id[0], memory, value: msg.slice(at + VALUE_KEY.length, -1) };
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
