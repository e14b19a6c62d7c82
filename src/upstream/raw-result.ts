/**
 * Passing an upstream's tool result on without serialising it again. The direct path keeps the
 * JSON text of the result it parsed (`UPSTREAM_RAW`, on the parsed object); `passThrough` decides
 * whether the hub's answer may reuse it, i.e. whether the hub would send exactly those members,
 * and if so marks the ToolResult with the text of its members other than `_meta` (`RAW_JSON`,
 * which the dispatcher splices into the answer). Anything else takes the old path: the result is
 * rebuilt from the parsed object and serialised.
 */
import { RAW_JSON } from '../registry/raw-json.js';
import type { ToolResult } from '../registry/types.js';

/** The JSON text of a result the direct path parsed (a non-enumerable own property). */
export const UPSTREAM_RAW: unique symbol = Symbol('moonhub upstream raw result');

/**
 * Offsets of the top-level commas of `s`, the text of a JSON object that JSON.parse accepted
 * (so every string closes). Strings are skipped with indexOf: a long text costs little.
 */
function topLevelCommas(s: string): number[] {
  const out: number[] = [];
  let depth = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === 34) {
      let j = i;
      for (;;) {
        j = s.indexOf('"', j + 1);
        let k = j - 1;
        while (s.charCodeAt(k) === 92) k--;
        if ((j - 1 - k) % 2 === 0) break; // an even run of backslashes: the quote closes
      }
      i = j;
    } else if (c === 123 || c === 91) depth++;
    else if (c === 125 || c === 93) depth--;
    else if (c === 44 && depth === 1) out.push(i);
  }
  return out;
}

/** Members the hub keeps of a tool result, in the order an upstream may send them. */
const KEPT = ['content', 'isError', 'structuredContent'];

/**
 * Marks `out` (built from `r` by the proxy's toolResult) with the JSON text of its members but
 * `_meta`, cut from the upstream's text, when that text says exactly what `out` holds: members
 * `content`, then `isError` (true), then `structuredContent` (an object), optionally followed by
 * `resultType` and `_meta` (dropped and kept aside: the hub sets its own), no other member and no
 * member twice. Everything else (an `isError: false` the hub drops, unknown members, another
 * order) keeps the serialising path.
 */
export function passThrough(r: Record<string, unknown>, out: ToolResult): void {
  let raw = (r as { [UPSTREAM_RAW]?: string })[UPSTREAM_RAW];
  if (raw === undefined || raw.charCodeAt(0) !== 123) return;
  let end = raw.length;
  while (raw.charCodeAt(end - 1) <= 32) end--;
  if (end !== raw.length) raw = raw.slice(0, end);
  const keys = Object.keys(r);
  let i = 0;
  for (const k of KEPT) if (keys[i] === k) i++;
  if (i === 0 || (keys.includes('isError') && r.isError !== true)) return;
  const kept = i;
  if (keys[i] === 'resultType') i++;
  if (keys[i] === '_meta') i++;
  if (i !== keys.length) return;
  if (r._meta !== undefined && out._meta === undefined) return;
  // One member per key: a repeated key (which JSON.parse resolves to its last value) is refused.
  const commas = topLevelCommas(raw);
  if (commas.length !== keys.length - 1) return;
  const text = kept === keys.length ? raw : raw.slice(0, commas[kept - 1]) + '}';
  Object.defineProperty(out, RAW_JSON, { value: text });
}
