/**
 * The shape of a client's JSON before it is parsed (limits.json): how deep it nests and how many
 * objects and arrays it holds. Both cost the hub's thread more than its size says: JSON.parse of
 * 4 MiB nested 2,000,000 deep took 850 ms, of 1.3 million empty objects 280 ms, and values nested
 * past ~5,000 levels make every JSON.stringify of them throw (audit, proxies, traces). One object
 * with many members costs more again: V8 keeps it as a dictionary, so parsing it, copying it to a
 * plugin's worker and checking it against a schema held the hub 4× as long as the same members in
 * objects of 100 (90,000 members: 206-321 ms of /healthz waiting on the loaded machine). One pass
 * over the text, strings skipped: ~1 ms per MiB.
 */
import { wireError, type WireError } from '../errors.js';

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_OBJECT = 0x7b;
const OPEN_ARRAY = 0x5b;
const CLOSE_OBJECT = 0x7d;
const CLOSE_ARRAY = 0x5d;
const COLON = 0x3a;

/** Members of the open object at each depth (a colon outside strings is one member). */
let members = new Int32Array(258);

/**
 * The refusal of a message nested deeper than `maxDepth`, with more containers than
 * `maxContainers`, or with an object of more than `maxKeys` members.
 */
export function jsonShapeRefusal(
  text: string,
  maxDepth: number,
  maxContainers: number,
  maxKeys = Infinity,
): WireError | undefined {
  let depth = 0;
  let containers = 0;
  if (members.length < maxDepth + 2) members = new Int32Array(maxDepth + 2);
  members[0] = 0;
  const n = text.length;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      // Skip the string: an escape takes the next character with it.
      for (i++; i < n; i++) {
        const s = text.charCodeAt(i);
        if (s === BACKSLASH) i++;
        else if (s === QUOTE) break;
      }
    } else if (c === COLON) {
      // Colons stand only between a key and its value: this member is the innermost object's.
      if (++members[depth]! > maxKeys) return wireError('json_too_many_keys', { max: maxKeys });
    } else if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      if (++depth > maxDepth) return wireError('json_too_deep', { max: maxDepth });
      if (++containers > maxContainers)
        return wireError('json_too_many_values', { max: maxContainers });
      members[depth] = 0;
    } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) depth--;
  }
  return undefined;
}
