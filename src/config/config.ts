/**
 * The config file (`--config FILE`, JSON or YAML by extension), checked against the published
 * schema in schemas/config.schema.json; an error names the key at fault. Paths in the file
 * (plugins directories, agent manifests) are relative to the file.
 */
import { dirname, resolve } from 'node:path';
import type { ExecuteConfig } from './execute-config.js';
import { loadDataFile } from './validate.js';

export type AuthMode = 'none' | 'token' | 'oauth';

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
}

export interface AuthConfig {
  mode?: AuthMode;
  allow_remote_none?: boolean;
  oauth?: OAuthConfig;
}

export interface HubConfig {
  hub_id?: string;
  public_url?: string;
  listen?: { host?: string; port?: number };
  plugins?: { dirs?: string[] };
  targets?: Record<string, TargetConfig>;
  agents?: Record<string, AgentConfig>;
  auth?: AuthConfig;
  /** The `execute` built-in and its limits; false leaves it out. */
  execute?: ExecuteConfig | false;
  /** Many processes serving as one hub (docs/scale-out.md). */
  cluster?: ClusterConfig;
}

export interface ClusterConfig {
  /** Redis URL shared by every instance (--redis). */
  redis?: string;
  /** Key and channel prefix, followed by the hub id (default "moonhub"). */
  prefix?: string;
  /** Worker processes on one port (--workers; default 1). */
  workers?: number;
}

export function loadConfig(file: string): HubConfig {
  const config = loadDataFile(file, 'config.schema.json', 'config file') as HubConfig;
  // Paths in the file are relative to the file, not to wherever the hub was started.
  const base = dirname(resolve(file));
  if (config.plugins?.dirs) config.plugins.dirs = config.plugins.dirs.map((d) => resolve(base, d));
  for (const agent of Object.values(config.agents ?? {})) {
    if (agent.manifest !== undefined) agent.manifest = resolve(base, agent.manifest);
  }
  if (config.execute && config.execute.root !== undefined)
    config.execute.root = resolve(base, config.execute.root);
  return config;
}
