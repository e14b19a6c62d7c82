/**
 * The config file's `observe` key: metrics, health, the audit log and the dashboard, with their
 * defaults (docs/operations.md). Absent, metrics and the dashboard are on (behind an admin
 * token) and the audit log is off.
 */

export interface ObserveConfig {
  metrics?: {
    /** Default true. */
    enabled?: boolean;
    /** A separate address for /metrics, /healthz and /readyz, served without a token. */
    listen?: { host?: string; port?: number };
    /** Call series labelled with a tool or prompt name (default 2000); later ones: tool="other". */
    max_tool_series?: number;
  };
  health?: {
    /** /readyz fails while a plugin failed to load (default true). */
    require_plugins?: boolean;
    /** Plugins (by name) whose upstreams must all be connected for /readyz (default none). */
    required_upstreams?: string[];
  };
  audit?: {
    /** A file (relative to the config file) or "stderr"; absent: no audit log. */
    to?: string;
    /** Put argument values in the log too (default false: only their size and hash). */
    include_arguments?: boolean;
  };
  dashboard?: {
    /** Default true. */
    enabled?: boolean;
    /** Where the page is served (default "/"). */
    path?: string;
    /** Viewers of the live call stream at once (default 8). */
    max_streams?: number;
    /** Recent calls kept for the page (default 200). */
    keep_calls?: number;
  };
}

export interface ObserveSettings {
  metrics: boolean;
  metricsListen: { host: string; port: number } | undefined;
  maxToolSeries: number | undefined;
  requirePlugins: boolean;
  requiredUpstreams: string[];
  auditTo: string | undefined;
  auditArguments: boolean;
  dashboard: boolean;
  dashboardPath: string;
  maxStreams: number;
  keepCalls: number;
}

export function observeSettingsOf(c: ObserveConfig = {}, auditFlag?: string): ObserveSettings {
  const listen = c.metrics?.listen;
  let path = c.dashboard?.path ?? '/';
  if (!path.startsWith('/')) path = '/' + path;
  return {
    metrics: c.metrics?.enabled !== false,
    metricsListen:
      listen === undefined
        ? undefined
        : { host: listen.host ?? '127.0.0.1', port: listen.port ?? 9464 },
    maxToolSeries: c.metrics?.max_tool_series,
    requirePlugins: c.health?.require_plugins !== false,
    requiredUpstreams: c.health?.required_upstreams ?? [],
    auditTo: auditFlag ?? c.audit?.to,
    auditArguments: c.audit?.include_arguments === true,
    dashboard: c.dashboard?.enabled !== false,
    dashboardPath: path,
    maxStreams: c.dashboard?.max_streams ?? 8,
    keepCalls: c.dashboard?.keep_calls ?? 200,
  };
}
