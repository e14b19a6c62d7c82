/**
 * The settings a command runs with: the config file (when given) overridden by command-line
 * flags. `--plugins` adds to the file's directories instead of replacing them.
 */
import { resolve } from 'node:path';
import { loadConfig, type AuthMode, type HubConfig } from './config.js';
import { executeOptionsOf, type ExecuteSettings } from './execute-config.js';
import { flowSettingsOf, type FlowSettings } from './flow-config.js';
import { pluginLimitsOf, type PluginLimitSettings } from './plugin-limits-config.js';
import { serverLimitsOf, type ServerLimitSettings } from './limits-config.js';
import { clusterLimitsOf, type ClusterLimitSettings } from './cluster-config.js';

export interface SettingsFlags {
  plugins?: string[];
  config?: string;
  port?: number;
  host?: string;
  hubId?: string;
  auth?: AuthMode;
  data?: string;
  url?: string;
  redis?: string;
  workers?: number;
}

export interface Settings {
  config: HubConfig;
  /** Absolute path of the config file, when there is one (watched while serving). */
  configFile: string | undefined;
  hub_id: string;
  dirs: string[];
  host: string;
  port: number;
  authMode: AuthMode;
  /** The hub's data folder (sessions database), absolute: --data, else data_dir, else ./.moonhub. */
  dataDir: string;
  /** Where dataDir came from, for messages ("--data", "data_dir in FILE", "the default"). */
  dataDirFrom: string;
  /** Each plugin's bounds from the config's plugin_limits (defaults for the rest). */
  pluginLimits: PluginLimitSettings;
  /** The front door's session-side bounds from the config's `limits:` (defaults for the rest). */
  serverLimits: ServerLimitSettings;
  /** The endpoint URL given by --url or public_url; otherwise derived once the port is known. */
  publicUrl: string | undefined;
  /** The `execute` built-in's options from the config file (`enabled: false` leaves it out). */
  execute: ExecuteSettings;
  /** Where plugins run (`plugins.isolation`) and their hard stop's grace (`plugins.hard_stop_grace_ms`). */
  isolation: {
    mode?: 'worker' | 'none';
    graceMs?: number;
    spareWorker?: boolean;
    /** `plugins.context_table_size`: callers' contexts each plugin worker keeps. */
    contextTableSize?: number;
  };
  /** Scale-out (docs/scale-out.md): Redis URL, key prefix, worker processes (1: none). */
  cluster: {
    redis: string | undefined;
    prefix: string | undefined;
    workers: number;
    /** `cluster.limits`: bounds of the shared session records (cluster-config.ts). */
    limits: ClusterLimitSettings;
  };
  /** Stream buffers, notice size and rate, rate limits (`limits.streams/notices/rate`). */
  flow: FlowSettings;
}

const DEFAULT_PORT = 8848;
const DEFAULT_DATA_DIR = '.moonhub';
const LOOPBACK_URL = /^http:\/\/(127\.0\.0\.1|localhost|\[::1\])(:\d+)?\//i;

export { isAuthMode } from './auth-mode.js';

export function resolveSettings(flags: SettingsFlags): Settings {
  const configFile = flags.config === undefined ? undefined : resolve(flags.config);
  const config = configFile ? loadConfig(configFile) : {};
  const authMode = flags.auth ?? config.auth?.mode ?? 'none';
  if (authMode === 'oauth' && config.auth?.oauth === undefined)
    throw new Error("auth mode 'oauth' needs the auth.oauth section in the config file");
  const jwks = config.auth?.oauth?.jwks_uri;
  // Keys fetched in the clear could be swapped by anyone on the path, except on this machine.
  if (jwks !== undefined && jwks.startsWith('http:') && !LOOPBACK_URL.test(jwks))
    throw new Error(`auth.oauth.jwks_uri must be https (http only on loopback): ${jwks}`);
  return {
    config,
    configFile,
    hub_id: flags.hubId ?? config.hub_id ?? 'moonhub',
    dirs: [...(config.plugins?.dirs ?? []), ...(flags.plugins ?? [])].map((d) => resolve(d)),
    host: flags.host ?? config.listen?.host ?? '127.0.0.1',
    port: flags.port ?? config.listen?.port ?? DEFAULT_PORT,
    authMode,
    dataDir: resolve(flags.data ?? config.data_dir ?? DEFAULT_DATA_DIR),
    dataDirFrom:
      flags.data !== undefined
        ? '--data'
        : config.data_dir !== undefined
          ? `data_dir in ${configFile}`
          : 'the default ./.moonhub of the current directory',
    pluginLimits: pluginLimitsOf(config.plugin_limits),
    serverLimits: serverLimitsOf(config.limits),
    publicUrl: flags.url ?? config.public_url,
    execute: executeOptionsOf(config.execute),
    isolation: {
      mode: config.plugins?.isolation,
      graceMs: config.plugins?.hard_stop_grace_ms,
      spareWorker: config.plugins?.spare_worker,
      contextTableSize: config.plugins?.context_table_size,
    },
    cluster: {
      redis: flags.redis ?? config.cluster?.redis,
      prefix: config.cluster?.prefix,
      workers: flags.workers ?? config.cluster?.workers ?? 1,
      limits: clusterLimitsOf(config.cluster?.limits),
    },
    flow: flowSettingsOf(config.limits),
  };
}

/** The endpoint URL clients use: the configured one, or http://HOST:PORT/mcp. */
export function endpointUrl(
  s: Pick<Settings, 'publicUrl' | 'host' | 'port'>,
  port = s.port,
): string {
  if (s.publicUrl !== undefined) return s.publicUrl;
  const host = s.host.includes(':') ? `[${s.host}]` : s.host === '0.0.0.0' ? '127.0.0.1' : s.host;
  return `http://${host}:${port}/mcp`;
}
