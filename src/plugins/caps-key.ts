/**
 * The context table's key for a client's capabilities: their JSON text, without serialising
 * them on every call. A 2026-07-28 request carries its capabilities in its own `_meta`, so every
 * call brings a new object, nearly always equal to the previous call's (one client, or a proxying
 * hub, sends the same ones each time). Keying a WeakMap by those objects cost a
 * `JSON.stringify` and a WeakMap entry per call: ~18-22 % more hub CPU a call than a call with
 * empty capabilities (docs/performance.md, "Proxy hop, session 14"). Here the last few distinct
 * capabilities are kept as a flat token list, a snapshot taken when first seen (a later change
 * to the object cannot make it answer for other values), and a call's object is walked against
 * them: equal token lists mean equal JSON text.
 */

/** Opening an object or an array, and closing either: tokens no JSON value can be. */
const OPEN_OBJECT: unique symbol = Symbol('{');
const OPEN_ARRAY: unique symbol = Symbol('[');
const CLOSE: unique symbol = Symbol('}');
type Token =
  string | number | boolean | null | typeof OPEN_OBJECT | typeof OPEN_ARRAY | typeof CLOSE;

/** Distinct capabilities remembered (most recent first), and the tokens each may hold. */
const REMEMBERED = 8;
const MAX_TOKENS = 256;

interface Known {
  tokens: Token[];
  text: string;
}

const known: Known[] = [];

function isPrimitive(v: unknown): v is string | number | boolean | null {
  return (
    v === null ||
    typeof v === 'string' ||
    typeof v === 'boolean' ||
    (typeof v === 'number' && Number.isFinite(v))
  );
}

/** Appends the tokens of `v` to `out`; false when `v` is not plain JSON or has too many. */
function flatten(v: unknown, out: Token[]): boolean {
  if (out.length >= MAX_TOKENS) return false;
  if (typeof v !== 'object' || v === null) {
    if (!isPrimitive(v)) return false;
    out.push(v);
    return true;
  }
  if (Array.isArray(v)) {
    out.push(OPEN_ARRAY);
    for (let i = 0; i < v.length; i++) if (!flatten(v[i], out)) return false;
  } else {
    out.push(OPEN_OBJECT);
    for (const k in v) {
      if (!Object.hasOwn(v, k)) continue;
      out.push(k);
      if (!flatten((v as Record<string, unknown>)[k], out)) return false;
    }
  }
  out.push(CLOSE);
  return true;
}

/**
 * Where the tokens of `v` end when they equal `tokens` from `i` on, else -1. Each step reads one
 * token or fails, so a call costs at most the remembered list's length, whatever `v` holds.
 */
function match(v: unknown, tokens: readonly Token[], i: number): number {
  if (typeof v !== 'object' || v === null) return isPrimitive(v) && tokens[i] === v ? i + 1 : -1;
  if (Array.isArray(v)) {
    if (tokens[i++] !== OPEN_ARRAY) return -1;
    for (let k = 0; k < v.length; k++) {
      i = match(v[k], tokens, i);
      if (i < 0) return -1;
    }
  } else {
    if (tokens[i++] !== OPEN_OBJECT) return -1;
    for (const k in v) {
      if (!Object.hasOwn(v, k)) continue;
      if (tokens[i++] !== k) return -1;
      i = match((v as Record<string, unknown>)[k], tokens, i);
      if (i < 0) return -1;
    }
  }
  return tokens[i] === CLOSE ? i + 1 : -1;
}

/** JSON.stringify(caps), found among the capabilities seen last when equal to one of them. */
export function capsKey(caps: Record<string, unknown>): string {
  for (let n = 0; n < known.length; n++) {
    const k = known[n]!;
    if (match(caps, k.tokens, 0) === k.tokens.length) {
      if (n > 0) {
        // Most recent first: the next call of this client finds it at once.
        known.splice(n, 1);
        known.unshift(k);
      }
      return k.text;
    }
  }
  const text = JSON.stringify(caps);
  const tokens: Token[] = [];
  if (flatten(caps, tokens)) {
    known.unshift({ tokens, text });
    if (known.length > REMEMBERED) known.pop();
  }
  return text;
}
