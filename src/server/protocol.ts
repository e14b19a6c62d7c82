/**
 * Protocol revisions this server speaks and the reserved names each uses. The strings match the
 * SDK v2 exports (a test checks that) but are kept here so the serving path does not load the SDK.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** 2025-era revisions negotiated through `initialize`, newest first. */
export const LEGACY_PROTOCOL_VERSIONS: readonly string[] = [
  '2025-11-25',
  '2025-06-18',
  '2025-03-26',
  '2024-11-05',
];
export const LATEST_LEGACY_VERSION = '2025-11-25';
/** Stateless revisions negotiated through the per-request `_meta` envelope. */
export const MODERN_PROTOCOL_VERSIONS: readonly string[] = ['2026-07-28'];
export const FIRST_MODERN_VERSION = '2026-07-28';
/** Revisions that still allowed JSON-RPC batches (removed in 2025-06-18). */
export const BATCH_VERSIONS: ReadonlySet<string> = new Set(['2025-03-26', '2024-11-05']);

export const PROTOCOL_VERSION_META_KEY = 'io.modelcontextprotocol/protocolVersion';
export const CLIENT_INFO_META_KEY = 'io.modelcontextprotocol/clientInfo';
export const CLIENT_CAPABILITIES_META_KEY = 'io.modelcontextprotocol/clientCapabilities';
export const SERVER_INFO_META_KEY = 'io.modelcontextprotocol/serverInfo';
export const SUBSCRIPTION_ID_META_KEY = 'io.modelcontextprotocol/subscriptionId';
export const LOG_LEVEL_META_KEY = 'io.modelcontextprotocol/logLevel';

export { LOG_LEVELS } from '../registry/types.js';

/** Revision strings are ISO dates, so string order is revision order. */
export function isModernVersion(version: string): boolean {
  return version >= FIRST_MODERN_VERSION;
}

/** Methods that exist on the 2026-07-28 revision (initialize, ping, logging/setLevel are gone). */
export const MODERN_METHODS: ReadonlySet<string> = new Set([
  'tools/call',
  'tools/list',
  'prompts/get',
  'prompts/list',
  'resources/list',
  'resources/templates/list',
  'resources/read',
  'completion/complete',
  'server/discover',
  'subscriptions/listen',
]);

/** 2026-07-28 results of these methods must carry `ttlMs` and `cacheScope`. */
export const CACHEABLE_METHODS: ReadonlySet<string> = new Set([
  'tools/list',
  'prompts/list',
  'resources/list',
  'resources/templates/list',
  'resources/read',
  'server/discover',
]);

/** Which body field the 2026-07-28 `Mcp-Name` header mirrors, per method. */
export const MCP_NAME_SOURCE: Readonly<Record<string, string>> = {
  'tools/call': 'name',
  'prompts/get': 'name',
  'resources/read': 'uri',
};

export interface Implementation {
  name: string;
  version: string;
  title?: string;
}

/** moonhub's version, read once from the package.json above this file (src/ or dist/src/). */
export function packageVersion(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 6; i++) {
    const file = join(dir, 'package.json');
    if (existsSync(file)) {
      try {
        const pkg = JSON.parse(readFileSync(file, 'utf8')) as { name?: string; version?: string };
        if (pkg.name === 'moonhub' && typeof pkg.version === 'string') return pkg.version;
      } catch {
        // An unreadable package.json further down (none expected) is skipped.
      }
    }
    dir = dirname(dir);
  }
  return '0.0.0';
}

const BASE64_SENTINEL_PREFIX = '=?base64?';
const BASE64_SENTINEL_SUFFIX = '?=';
const BASE64_CANONICAL = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/**
 * Decodes an `Mcp-Name` header value: plain ASCII as is, or the `=?base64?…?=` sentinel the
 * client uses for values a header cannot carry. `undefined` when the sentinel is malformed.
 */
export function decodeHeaderValue(value: string): string | undefined {
  if (!(value.startsWith(BASE64_SENTINEL_PREFIX) && value.endsWith(BASE64_SENTINEL_SUFFIX)))
    return value;
  const b64 = value.slice(
    BASE64_SENTINEL_PREFIX.length,
    value.length - BASE64_SENTINEL_SUFFIX.length,
  );
  if (!BASE64_CANONICAL.test(b64)) return undefined;
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(Buffer.from(b64, 'base64'));
  } catch {
    return undefined;
  }
}

/** Largest accepted message (HTTP body or stdio line) unless configured otherwise: 4 MiB. */
export const DEFAULT_MAX_BODY_BYTES = 4 * 1024 * 1024;
