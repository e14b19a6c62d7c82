/**
 * The config file (`--config FILE`, JSON or YAML by extension), checked against the published
 * schema in schemas/config.schema.json; an error names the key at fault. Paths in the file
 * (plugins directories, agent manifests) are relative to the file.
 */
import type { AuthMode } from './auth-mode.js';
import type { ClusterLimitsConfig } from './cluster-config.js';
import { dirname, resolve } from 'node:path';
import type { ExecuteConfig } from './execute-config.js';
import type { FlowLimitsConfig } from './flow-config.js';
import type { ObserveConfig } from './observe-config.js';
import type { PerformanceConfig } from './performance-config.js';
import { loadDataFile } from './validate.js';
import { interpolateEnv } from './interpolate.js';
import type { UpstreamConfig } from '../upstream/from-config.js';
import type { PluginLimitsConfig } from './plugin-limits-config.js';
import type { LimitsConfig } from './limits-config.js';
import type { ShutdownConfig } from './shutdown-config.js';

export type { AuthMode };

/** What a session of a target may see at most (LUA_API §2.1). */
export interface TargetConfig {
  plugins?: string[];
  builtins?: string[];
}

/** What an agent's sessions may see, narrowing the target's ceiling. */
export interface AgentConfig {
  plugins?: string[];
  builtins?: string[];
  /** Absolute path of a JSON/YAML file holding {plugins?, builtins?}; watched while serving. */
  manifest?: string;
}

export interface OAuthConfig {
  issuer: string;
  jwks_uri: string;
  /** Default: the hub's public URL. */
  audience?: string;
  /** Default: "agent". */
  agent_claim?: string;
  target_claim?: string;
  scopes?: string[];
  /** Bytes of the JWKS document read at most (default 1 MiB). */
  jwks_max_bytes?: number;
  /** A JWKS fetch that takes longer fails (default 5000 ms). */
  jwks_timeout_ms?: number;
}

export interface AuthConfig {
  mode?: AuthMode;
  allow_remote_none?: boolean;
  oauth?: OAuthConfig;
}

/** Values a plugin reads with `secrets.get(key)`: `plugins.settings.<plugin name>`. */
export type PluginSettings = Record<string, unknown>;

/** One `upstreams` entry (the proxy layer defines it: upstream/from-config.ts). */
export type { UpstreamConfig } from '../upstream/from-config.js';

export interface HubConfig {
  hub_id?: string;
  public_url?: string;
  listen?: { host?: string; port?: number };
  plugins?: {
    dirs?: string[];
    settings?: Record<string, PluginSettings>;
    /** 'worker' (default): each plugin on a worker thread the hub can stop; 'none': on its thread. */
    isolation?: 'worker' | 'none';
    /** How long past its limit a plugin call may run before its worker is terminated (ms). */
    hard_stop_grace_ms?: number;
    /** Keep one plugin worker started ahead of need, for fast reloads and restarts. */
    spare_worker?: boolean;
    /** Callers' contexts each plugin worker keeps (default 256; 0: sent with every call). */
    context_table_size?: number;
  };
  /** Upstream MCP servers by name (`mcpServers` shape); see UpstreamConfig. */
  upstreams?: Record<string, UpstreamConfig>;
  /** Values that came from `${ENV}` references: kept out of logs, status and errors. */
  secrets?: string[];
  targets?: Record<string, TargetConfig>;
  agents?: Record<string, AgentConfig>;
  auth?: AuthConfig;
  /** The `execute` built-in and its limits; false leaves it out. */
  execute?: ExecuteConfig | false;
  /** The data folder (sessions database); absolute once loaded (relative to the file in it). */
  data_dir?: string;
  /** Bounds on each plugin (src/lua-api/plugin-limits.ts), in the file's snake_case. */
  plugin_limits?: PluginLimitsConfig;
  /** Server-side bounds: sessions, subscriptions, listens, batches and ids
   * (src/config/limits-config.ts); streams, notices and rate limits (src/config/flow-config.ts). */
  limits?: LimitsConfig & FlowLimitsConfig;
  /** Graceful shutdown's drain deadline (src/config/shutdown-config.ts). */
  shutdown?: ShutdownConfig;
  /** Metrics, health, audit log and dashboard (src/config/observe-config.ts). */
  observe?: ObserveConfig;
  /** Many processes serving as one hub (docs/scale-out.md). */
  cluster?: ClusterConfig;
  /** Caches and their bounds (src/config/performance-config.ts). */
  performance?: PerformanceConfig;
}

export interface ClusterConfig {
  /** Redis URL shared by every instance (--redis). */
  redis?: string;
  /** Key and channel prefix, followed by the hub id (default "moonhub"). */
  prefix?: string;
  /** Worker processes on one port (--workers; default 1). */
  workers?: number;
  /** Bounds of the shared 2025 session records, event logs and client answers. */
  limits?: ClusterLimitsConfig;
}

export function loadConfig(file: string): HubConfig {
  let secrets: string[] = [];
  const config = loadDataFile(file, 'config.schema.json', 'config file', (data) => {
    const done = interpolateEnv(data);
    secrets = done.secrets;
    return done.data;
  }) as HubConfig;
  if (secrets.length > 0) config.secrets = secrets;
  // Paths in the file are relative to the file, not to wherever the hub was started.
  const base = dirname(resolve(file));
  if (config.plugins?.dirs) config.plugins.dirs = config.plugins.dirs.map((d) => resolve(base, d));
  for (const agent of Object.values(config.agents ?? {})) {
    if (agent.manifest !== undefined) agent.manifest = resolve(base, agent.manifest);
  }
  for (const up of Object.values(config.upstreams ?? {})) {
    if (up.cwd !== undefined) up.cwd = resolve(base, up.cwd);
  }
  if (config.data_dir !== undefined) config.data_dir = resolve(base, config.data_dir);
  if (config.execute && config.execute.root !== undefined)
    config.execute.root = resolve(base, config.execute.root);
  const audit = config.observe?.audit;
  if (audit?.to !== undefined && audit.to !== 'stderr') audit.to = resolve(base, audit.to);
  return config;
}
