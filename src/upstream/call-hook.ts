/**
 * A seam for watching proxied calls (metrics, trace spans) without upstream/ knowing who
 * watches: one hook per registry, set by the process that serves it. The hook runs the call and
 * may hand it a `_meta` to send along (the W3C trace context, so the upstream's spans join ours).
 */
import type { Registry } from '../registry/registry.js';

export interface UpstreamCallInfo {
  /** The upstream's address as configured (may hold credentials: redact before showing). */
  url: string;
  /** The plugin that proxies it. */
  owner: string;
  method: 'tools/call' | 'prompts/get' | 'resources/read';
  /** The upstream's name of the tool or prompt, or the URI. */
  name: string;
}

export type UpstreamCallHook = <T>(
  info: UpstreamCallInfo,
  run: (meta: Record<string, string> | undefined) => Promise<T>,
) => Promise<T>;

const hooks = new WeakMap<Registry, UpstreamCallHook>();

export function setUpstreamCallHook(registry: Registry, hook: UpstreamCallHook | undefined): void {
  if (hook === undefined) hooks.delete(registry);
  else hooks.set(registry, hook);
}

export function upstreamCallHookOf(registry: Registry): UpstreamCallHook | undefined {
  return hooks.get(registry);
}
