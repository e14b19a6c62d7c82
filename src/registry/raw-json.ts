/**
 * A result object may carry the JSON text of its members other than `_meta` (`RAW_JSON`, a
 * non-enumerable own property set by whoever built it from that text, e.g. a proxied upstream's
 * answer): the dispatcher then splices that text into the answer instead of serialising the
 * object. A copy of the object (`{ ...result }`) does not carry it, so whatever rebuilds a result
 * falls back to serialising. Whoever sets it must not change the object afterwards.
 */
export const RAW_JSON: unique symbol = Symbol('moonhub raw result json');

/** The result's JSON text without `_meta`, when it carries one. */
export function rawJsonOf(result: object): string | undefined {
  return (result as { [RAW_JSON]?: string })[RAW_JSON];
}
