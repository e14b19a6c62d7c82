/** Small pure helpers the registry uses to hand entries and contexts out. */
import type { CallContext, OwnerFilter, ResourceEntry, ResourceInfo } from './types.js';

/**
 * The context a handler gets: the caller's view travels in `ctx.filter`, so calls a handler makes
 * on the caller's behalf (execute, mcp.call) are authorized the same way. Own getters (the
 * dispatcher's lazy `signal`) are kept as getters.
 */
export function withView(ctx: CallContext, filter: OwnerFilter): CallContext {
  if (filter === undefined || ctx.filter !== undefined) return ctx;
  const descriptors = Object.getOwnPropertyDescriptors(ctx);
  return Object.defineProperties(
    {},
    {
      ...descriptors,
      filter: { value: filter, enumerable: true, writable: true, configurable: true },
    },
  ) as CallContext;
}

export function byKey<T>(key: (v: T) => string): (a: T, b: T) => number {
  return (a, b) => {
    const x = key(a);
    const y = key(b);
    return x < y ? -1 : x > y ? 1 : 0;
  };
}

export function describeResource<T extends object>(
  head: T,
  r: ResourceEntry,
): T & Omit<ResourceInfo, 'uri'> {
  const out: T & Omit<ResourceInfo, 'uri'> = { ...head, name: r.name };
  if (r.title !== undefined) out.title = r.title;
  if (r.description !== undefined) out.description = r.description;
  if (r.mimeType !== undefined) out.mimeType = r.mimeType;
  if (r.icons !== undefined) out.icons = r.icons;
  return out;
}
