/**
 * What `mcp.proxy(url, opts)` asks of an upstream proxy (proxy.ts) and what its status reports.
 */
import type { CallContext } from '../registry/types.js';
import type { ConnectionOptions } from './connection.js';
import type { ChangedTool } from './proxy-tools.js';

export interface ProxyOptions {
  prefix?: string;
  token?: string;
  headers?: Record<string, string>;
  env?: Record<string, string>;
  cwd?: string;
  include?: string[];
  exclude?: string[];
  timeoutMs?: number;
  connectTimeoutMs?: number;
  idleTimeoutMs?: number;
  pin?: boolean;
  /** Send the caller's context as `params._meta.botster` (default true, as Botster does). */
  forwardContext?: boolean;
  transformArguments?: (
    name: string,
    args: Record<string, unknown>,
    ctx: CallContext,
  ) => Promise<Record<string, unknown> | undefined>;
  onAuthError?: ConnectionOptions['onAuthError'];
  oauth?: ConnectionOptions['oauth'];
  backoffMs?: number;
  /** Bytes of one answer (plugin_limits.upstream_answer_bytes; default 16 MiB). */
  answerBytes?: number;
  /** Requests written together on one socket (plugin_limits.upstream_pipeline; default 16). */
  pipelineDepth?: number;
  /**
   * Tools, prompts and resources (each kind) imported from the upstream; the rest are skipped
   * (plugin_limits.registrations; default 10000).
   */
  maxEntries?: number;
  /** The upstream's requests to the hub taken per second (upstream_requests_per_second; 50). */
  requestsPerSecond?: number;
  /** ... and handled at once (plugin_limits.upstream_requests_in_flight; default 16). */
  requestsInFlight?: number;
  /** Least time between imports the upstream's list_changed asks for (upstream_import_interval_ms). */
  importIntervalMs?: number;
}

export interface ProxyStatus {
  url: string;
  owner: string;
  prefix: string;
  state: string;
  error?: string;
  connects: number;
  /** The stdio child's process id, while one runs. */
  pid?: number;
  tools: number;
  prompts: number;
  resources: number;
  changed: ChangedTool[];
}
