/**
 * The config file's `limits:` section (snake_case, checked by the schema) turned into the
 * camelCase session-side bounds the server takes (src/server/session-limits.ts, which config/
 * does not import: the compiler checks the shape where the hub hands it over).
 */

/** `limits:` in the config file. */
export interface LimitsConfig {
  sessions?: {
    total?: number;
    per_principal?: number;
    idle_timeout_ms?: number;
    evict_idle_ms?: number;
    client_info_chars?: number;
    client_info_containers?: number;
  };
  subscriptions?: {
    per_session?: number;
    uri_length?: number;
    chars_per_session?: number;
    bytes_per_principal?: number;
    bytes_total?: number;
  };
  listens?: { per_principal?: number; total?: number };
  batch_length?: number;
  request_id_length?: number;
  name_length?: number;
  stdio_in_flight?: number;
  http_in_flight_per_principal?: number;
  body_bytes?: { per_principal?: number; total?: number };
  json?: { depth?: number; containers?: number; object_keys?: number };
  request_state_ttl_ms?: number;
  connections?: { total?: number; per_address?: number; headers_ms?: number };
}

/** The bounds as the server's options name them; missing ones keep their defaults. */
export interface ServerLimitSettings {
  sessionsTotal?: number;
  sessionsPerPrincipal?: number;
  sessionIdleMs?: number;
  sessionEvictIdleMs?: number;
  sessionClientInfoChars?: number;
  sessionClientInfoContainers?: number;
  subscriptionsPerSession?: number;
  subscriptionUriLength?: number;
  subscriptionCharsPerSession?: number;
  subscriptionBytesPerPrincipal?: number;
  subscriptionBytesTotal?: number;
  listensPerPrincipal?: number;
  listensTotal?: number;
  batchLength?: number;
  requestIdLength?: number;
  nameLength?: number;
  stdioInFlight?: number;
  httpInFlightPerPrincipal?: number;
  bodyBytesPerPrincipal?: number;
  bodyBytesTotal?: number;
  jsonDepth?: number;
  jsonContainers?: number;
  jsonObjectKeys?: number;
  requestStateTtlMs?: number;
  connectionsTotal?: number;
  connectionsPerAddress?: number;
  connectionHeadersMs?: number;
}

export function serverLimitsOf(section: LimitsConfig | undefined): ServerLimitSettings {
  const c = section ?? {};
  const out: ServerLimitSettings = {
    sessionsTotal: c.sessions?.total,
    sessionsPerPrincipal: c.sessions?.per_principal,
    sessionIdleMs: c.sessions?.idle_timeout_ms,
    sessionEvictIdleMs: c.sessions?.evict_idle_ms,
    sessionClientInfoChars: c.sessions?.client_info_chars,
    sessionClientInfoContainers: c.sessions?.client_info_containers,
    subscriptionsPerSession: c.subscriptions?.per_session,
    subscriptionUriLength: c.subscriptions?.uri_length,
    subscriptionCharsPerSession: c.subscriptions?.chars_per_session,
    subscriptionBytesPerPrincipal: c.subscriptions?.bytes_per_principal,
    subscriptionBytesTotal: c.subscriptions?.bytes_total,
    listensPerPrincipal: c.listens?.per_principal,
    listensTotal: c.listens?.total,
    batchLength: c.batch_length,
    requestIdLength: c.request_id_length,
    nameLength: c.name_length,
    stdioInFlight: c.stdio_in_flight,
    httpInFlightPerPrincipal: c.http_in_flight_per_principal,
    bodyBytesPerPrincipal: c.body_bytes?.per_principal,
    bodyBytesTotal: c.body_bytes?.total,
    jsonDepth: c.json?.depth,
    jsonContainers: c.json?.containers,
    jsonObjectKeys: c.json?.object_keys,
    requestStateTtlMs: c.request_state_ttl_ms,
    connectionsTotal: c.connections?.total,
    connectionsPerAddress: c.connections?.per_address,
    connectionHeadersMs: c.connections?.headers_ms,
  };
  for (const k of Object.keys(out) as (keyof ServerLimitSettings)[])
    if (out[k] === undefined) delete out[k];
  return out;
}
