/**
 * The properties of chilkat's classes (LUA_API §4): each one's kind (checked on write), getter,
 * and setter (none for a read-only property); the defaults live in the objects themselves.
 */
import type { JsonDoc } from './chilkat-json.js';
import { CHILKAT_VERSION, type ChilkatMcp } from './chilkat-mcp.js';

export interface SocketSettings {
  http_proxy_hostname: string;
  http_proxy_port: number;
  http_proxy_username: string;
  http_proxy_password: string;
  client_ip_address: string;
}

export type PropKind = 'string' | 'int' | 'bool';
export interface PropDef {
  kind: PropKind;
  get: (o: never) => unknown;
  set?: (o: never, v: never) => void;
}

function p<T>(kind: PropKind, get: (o: T) => unknown, set?: (o: T, v: never) => void): PropDef {
  return { kind, get: get as PropDef['get'], set: set as PropDef['set'] };
}

const MCP_PROPS: Record<string, PropDef> = {
  auth_token: p<ChilkatMcp>(
    'string',
    (o) => o.authToken,
    (o, v: string) => (o.authToken = v),
  ),
  connect_timeout_ms: p<ChilkatMcp>(
    'int',
    (o) => o.connectTimeoutMs,
    (o, v: number) => (o.connectTimeoutMs = v),
  ),
  idle_timeout_ms: p<ChilkatMcp>(
    'int',
    (o) => o.idleTimeoutMs,
    (o, v: number) => (o.idleTimeoutMs = v),
  ),
  heartbeat_ms: p<ChilkatMcp>(
    'int',
    (o) => o.heartbeatMs,
    (o, v: number) => (o.heartbeatMs = v),
  ),
  protocol_version: p<ChilkatMcp>(
    'string',
    (o) => o.protocolVersion,
    (o, v: string) => (o.protocolVersion = v),
  ),
  verbose_logging: p<ChilkatMcp>(
    'bool',
    (o) => o.verboseLogging,
    (o, v: boolean) => (o.verboseLogging = v),
  ),
  debug_log_file_path: p<ChilkatMcp>(
    'string',
    (o) => o.debugLogFilePath,
    (o, v: string) => (o.debugLogFilePath = v),
  ),
  last_method_success: p<ChilkatMcp>(
    'bool',
    (o) => o.lastMethodSuccess,
    (o, v: boolean) => (o.lastMethodSuccess = v),
  ),
  connected: p<ChilkatMcp>('bool', (o) => o.connected),
  server_name: p<ChilkatMcp>('string', (o) => o.serverName),
  server_version: p<ChilkatMcp>('string', (o) => o.serverVersion),
  server_instructions: p<ChilkatMcp>('string', (o) => o.serverInstructions),
  session_id: p<ChilkatMcp>('string', (o) => o.sessionId),
  last_error_text: p<ChilkatMcp>('string', (o) => o.lastErrorText),
  last_error_html: p<ChilkatMcp>('string', (o) => errorHtml(o.lastErrorText)),
  last_error_xml: p<ChilkatMcp>('string', (o) => errorXml(o.lastErrorText)),
  version: p<ChilkatMcp>('string', () => CHILKAT_VERSION),
};

const JSON_PROPS: Record<string, PropDef> = {
  i: p<JsonDoc>(
    'int',
    (o) => o.i,
    (o, v: number) => (o.i = v),
  ),
  j: p<JsonDoc>(
    'int',
    (o) => o.j,
    (o, v: number) => (o.j = v),
  ),
  k: p<JsonDoc>(
    'int',
    (o) => o.k,
    (o, v: number) => (o.k = v),
  ),
  emit_compact: p<JsonDoc>(
    'bool',
    (o) => o.emitCompact,
    (o, v: boolean) => (o.emitCompact = v),
  ),
  size: p<JsonDoc>('int', (o) => o.size),
  last_error_text: p<JsonDoc>('string', (o) => o.lastErrorText),
  last_method_success: p<JsonDoc>(
    'bool',
    (o) => o.lastMethodSuccess,
    (o, v: boolean) => (o.lastMethodSuccess = v),
  ),
  version: p<JsonDoc>('string', () => CHILKAT_VERSION),
};

const SOCKET_PROPS: Record<string, PropDef> = Object.fromEntries(
  (
    [
      ['http_proxy_hostname', 'string'],
      ['http_proxy_port', 'int'],
      ['http_proxy_username', 'string'],
      ['http_proxy_password', 'string'],
      ['client_ip_address', 'string'],
    ] as const
  ).map(([name, kind]) => [
    name,
    p<Record<string, unknown>>(
      kind,
      (o) => o[name],
      (o, v: never) => (o[name] = v),
    ),
  ]),
);

export const PROPS: Record<'Mcp' | 'JsonObject' | 'Socket', Record<string, PropDef>> = {
  Mcp: MCP_PROPS,
  JsonObject: JSON_PROPS,
  Socket: SOCKET_PROPS,
};

function escapeXml(s: string): string {
  return s.replace(/[<>&"]/g, (c) => `&#${c.charCodeAt(0)};`);
}
function errorHtml(text: string): string {
  return `<html><body><pre>${escapeXml(text)}</pre></body></html>`;
}
function errorXml(text: string): string {
  return `<ChilkatLog>${escapeXml(text)}</ChilkatLog>`;
}
