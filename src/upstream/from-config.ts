/**
 * The config file's `upstreams` (the `mcpServers` shape MCP clients use): each entry becomes the
 * same proxy `mcp.proxy` makes, owned by the entry's name, so views scope it like a plugin of that
 * name and `hub_status` shows it like any other upstream.
 */
import type { Logger } from '../log.js';
import type { Registry } from '../registry/registry.js';
import { upstreamsOf } from './manager.js';
import type { ProxyOptions } from './proxy.js';
import { shellWord } from '../shell-words.js';

/**
 * One `upstreams` entry: the `mcpServers` shape of MCP clients (command/args/env/cwd or
 * url/headers) plus moonhub's proxy options. Its name scopes it like a plugin's.
 */
export interface UpstreamConfig {
  type?: 'stdio' | 'http' | 'streamable-http' | 'streamableHttp' | 'sse';
  command?: string;
  args?: string[];
  env?: Record<string, string>;
  /** Absolute once loaded (relative to the config file in the file). */
  cwd?: string;
  url?: string;
  headers?: Record<string, string>;
  disabled?: boolean;
  /** Default: the upstream's name and a dot. */
  prefix?: string;
  include?: string[];
  exclude?: string[];
  pin?: boolean;
  timeout_ms?: number;
  connect_timeout_ms?: number;
}

/** The proxy address of an entry: `stdio:<command line>` or its URL. */
export function upstreamAddress(up: UpstreamConfig): string {
  if (up.command !== undefined)
    return `stdio:${[up.command, ...(up.args ?? [])].map(shellWord).join(' ')}`;
  if (up.url !== undefined) return up.url;
  throw new Error('an upstream needs command or url');
}

export function upstreamProxyOptions(name: string, up: UpstreamConfig): ProxyOptions {
  return {
    prefix: up.prefix ?? `${name}_`,
    headers: up.headers,
    env: up.env,
    cwd: up.cwd,
    include: up.include,
    exclude: up.exclude,
    pin: up.pin === true,
    timeoutMs: up.timeout_ms,
    connectTimeoutMs: up.connect_timeout_ms,
  };
}

/**
 * Starts every enabled upstream of the config (the plugin host refuses plugins of their names).
 * The promise settles once each has imported or failed its first attempt (at most `waitMs`);
 * `serve` does not wait for it, `call` and `list` do.
 */
export function startConfiguredUpstreams(
  registry: Registry,
  upstreams: Readonly<Record<string, UpstreamConfig>>,
  logger: Logger,
  waitMs = 10_000,
): Promise<void> {
  const started: Promise<unknown>[] = [];
  const manager = upstreamsOf(registry);
  // The declaring "state" of a config upstream: no plugin reload ever settles it away.
  const declaredBy = { config: true };
  for (const [name, up] of Object.entries(upstreams)) {
    if (up.disabled === true) continue;
    const address = upstreamAddress(up);
    const log = logger.child({ upstream: name });
    const opts = upstreamProxyOptions(name, up);
    started.push(
      manager
        .proxy(name, address, opts, declaredBy, log)
        .then((proxy) => proxy.settle(Math.min(opts.connectTimeoutMs ?? waitMs, waitMs)))
        .catch((err: unknown) => log.error({ err }, 'upstream from the config could not start')),
    );
  }
  return Promise.all(started).then(() => undefined);
}
