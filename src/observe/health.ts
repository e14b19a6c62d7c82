/**
 * Health checks for orchestrators: `/healthz` answers while the process serves; `/readyz` also
 * needs every plugin loaded (unless `require_plugins: false`) and the upstreams of the plugins
 * named in `required_upstreams` connected, and no graceful shutdown under way. Both are cheap (no I/O) and show counts, not names,
 * since they need no token.
 */
export interface ReadinessSources {
  plugins: () => { name: string; loaded: boolean }[];
  upstreams: () => { owner: string; state: string }[];
  requirePlugins: boolean;
  requiredUpstreams: readonly string[];
  /** True once a graceful shutdown began: no longer ready, whatever else holds. */
  draining?: () => boolean;
}

export interface Readiness {
  ready: boolean;
  /** Present (true) while the hub shuts down. */
  draining?: true;
  plugins: { loaded: number; failed: number };
  required_upstreams: { connected: number; not_connected: number };
}

export function readiness(src: ReadinessSources): Readiness {
  const plugins = src.plugins();
  const failed = plugins.filter((p) => !p.loaded).length;
  const required = new Set(src.requiredUpstreams);
  const wanted = src.upstreams().filter((u) => required.has(u.owner));
  const down = wanted.filter((u) => u.state !== 'connected').length;
  // A required plugin that declared no upstream at all (yet) is not ready either.
  const missing = [...required].filter((p) => !wanted.some((u) => u.owner === p)).length;
  const draining = src.draining?.() === true;
  return {
    ready: !draining && (!src.requirePlugins || failed === 0) && down === 0 && missing === 0,
    ...(draining ? { draining: true as const } : {}),
    plugins: { loaded: plugins.length - failed, failed },
    required_upstreams: { connected: wanted.length - down, not_connected: down + missing },
  };
}
