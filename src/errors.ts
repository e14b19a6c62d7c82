/**
 * The error registry: every error the hub sends on the wire (JSON-RPC code, HTTP status, message
 * template) and every local error code, each defined once, here. Code throws through `wireError`
 * (or the local error classes, whose codes are typed from `LOCAL_ERRORS`); `docs/errors.md`
 * lists the same table and a test keeps the two in step. It imports only its own halves
 * (error-template.ts, local-errors.ts), which import nothing else, so every floor may use it.
 */

import { fill } from './error-template.js';

export * from './local-errors.js';

/** JSON-RPC 2.0 codes (the spec's, then the implementation-defined ones this hub uses). */
export const PARSE_ERROR = -32700;
export const INVALID_REQUEST = -32600;
export const METHOD_NOT_FOUND = -32601;
export const INVALID_PARAMS = -32602;
export const INTERNAL_ERROR = -32603;
/** Generic transport error the SDK uses for HTTP-level problems (media type, Host, size...). */
export const SERVER_ERROR = -32000;
/** 2025 sessions: the `Mcp-Session-Id` is unknown (the SDK's code for it). */
export const SESSION_NOT_FOUND = -32001;
/** 2025 revisions: `resources/read` of an unknown URI. */
export const RESOURCE_NOT_FOUND = -32002;
/** 2026-07-28: the standard HTTP headers disagree with the body (SEP-2243 `HeaderMismatch`). */
export const HEADER_MISMATCH = -32020;
export const MISSING_CLIENT_CAPABILITY = -32021;
export const UNSUPPORTED_PROTOCOL_VERSION = -32022;
/** The credentials are missing or refused (HTTP 401 with a Bearer challenge). */
export const UNAUTHORIZED = -32030;
/** The credentials are good but do not reach this endpoint (HTTP 403 insufficient_scope). */
export const FORBIDDEN = -32031;
/** A rate limit refused the request (HTTP 429 with Retry-After; `data.retryAfterMs`). */
export const RATE_LIMITED = -32029;

export interface WireErrorDef {
  readonly code: number;
  /**
   * The HTTP status of the answer. For errors that answer a dispatched request this is the
   * 2026-07-28 status; 2025 sessions carry every dispatched error in a 200.
   */
  readonly status: number;
  /** The message, with `{name}` slots filled from the params given to `wireError`. */
  readonly message: string;
}

export const WIRE_ERRORS = {
  // ---- refused before dispatch (any transport) ----
  parse_error: { code: PARSE_ERROR, status: 400, message: 'Parse error: Invalid JSON' },
  invalid_message: {
    code: INVALID_REQUEST,
    status: 400,
    message: 'Invalid Request: not a JSON-RPC 2.0 request, notification or response',
  },
  batch_member_invalid: { code: INVALID_REQUEST, status: 200, message: 'Invalid Request' },
  batch_empty: {
    code: INVALID_REQUEST,
    status: 400,
    message: 'Invalid Request: empty JSON-RPC batch',
  },
  batch_modern: {
    code: INVALID_REQUEST,
    status: 400,
    message: 'Invalid Request: JSON-RPC batches may not carry 2026-07-28 requests',
  },
  batch_initialize: {
    code: INVALID_REQUEST,
    status: 400,
    message: 'Invalid Request: initialize may not be part of a batch',
  },
  batch_too_long: {
    code: INVALID_REQUEST,
    status: 400,
    message:
      'Invalid Request: a JSON-RPC batch may hold at most {max} messages (limits.batch_length); this one has {length}',
  },
  request_id_invalid: {
    code: INVALID_REQUEST,
    status: 400,
    message: 'Invalid Request: the request id {reason}',
  },
  progress_token_invalid: {
    code: INVALID_REQUEST,
    status: 400,
    message: 'Invalid Request: the progress token {reason}',
  },
  request_id_in_use: {
    code: INVALID_REQUEST,
    status: 400,
    message:
      'Invalid Request: the request id {id} is already used by a call of this session that has not ended',
  },
  batch_unsupported: {
    code: INVALID_REQUEST,
    status: 400,
    message: 'Invalid Request: JSON-RPC batches are not supported on protocol revision {version}',
  },
  json_too_deep: {
    code: INVALID_REQUEST,
    status: 400,
    message:
      'Invalid Request: the message nests objects and arrays deeper than {max} levels (limits.json.depth)',
  },
  json_too_many_keys: {
    code: INVALID_REQUEST,
    status: 400,
    message:
      'Invalid Request: an object in the message has more than {max} members (limits.json.object_keys)',
  },
  json_too_many_values: {
    code: INVALID_REQUEST,
    status: 400,
    message:
      'Invalid Request: the message holds more than {max} objects and arrays (limits.json.containers)',
  },
  line_too_large: {
    code: INVALID_REQUEST,
    status: 413,
    message: 'Message exceeds {max} bytes',
  },
  header_mismatch: {
    code: HEADER_MISMATCH,
    status: 400,
    message: 'Bad Request: the request headers and body disagree: {detail}',
  },
  invalid_envelope: { code: INVALID_PARAMS, status: 400, message: '{detail}' },
  unsupported_protocol_version: {
    code: UNSUPPORTED_PROTOCOL_VERSION,
    status: 400,
    message: 'Unsupported protocol version: {version}',
  },
  // ---- HTTP transport ----
  not_found: { code: SERVER_ERROR, status: 404, message: 'Not Found' },
  forbidden_host: {
    code: SERVER_ERROR,
    status: 403,
    message: 'Forbidden: invalid Host header{host}',
  },
  forbidden_origin: {
    code: SERVER_ERROR,
    status: 403,
    message: 'Forbidden: origin not allowed: {origin}',
  },
  session_revoked: {
    code: FORBIDDEN,
    status: 403,
    message:
      'moonhub session {session} has been revoked: this stdio connection can no longer list or call anything; start it again with a new session (`moonhub session create`)',
  },
  method_not_allowed: { code: SERVER_ERROR, status: 405, message: 'Method Not Allowed' },
  get_without_session: {
    code: SERVER_ERROR,
    status: 405,
    message: 'Method Not Allowed: no session stream without Mcp-Session-Id',
  },
  unsupported_media_type: {
    code: SERVER_ERROR,
    status: 415,
    message: 'Unsupported Media Type: Content-Type must be application/json',
  },
  not_acceptable: {
    code: SERVER_ERROR,
    status: 406,
    message: 'Not Acceptable: Client must accept text/event-stream',
  },
  body_too_large: {
    code: SERVER_ERROR,
    status: 413,
    message: 'Payload Too Large: the request body exceeds {max} bytes',
  },
  body_bytes_principal: {
    code: SERVER_ERROR,
    status: 429,
    message:
      'Too Many Requests: this principal already has {max} bytes of request bodies arriving (limits.body_bytes.per_principal); finish or close them, or retry later',
  },
  body_bytes_total: {
    code: SERVER_ERROR,
    status: 503,
    message:
      'Service Unavailable: {max} bytes of request bodies are arriving (limits.body_bytes.total); retry later',
  },
  session_id_required: {
    code: SERVER_ERROR,
    status: 400,
    message: 'Bad Request: Mcp-Session-Id header is required',
  },
  session_not_found: { code: SESSION_NOT_FOUND, status: 404, message: 'Session not found' },
  session_version_header: {
    code: SERVER_ERROR,
    status: 400,
    message:
      'Bad Request: Unsupported protocol version: {version} (supported versions: {supported})',
  },
  too_many_sessions: {
    code: SERVER_ERROR,
    status: 503,
    message:
      'Service Unavailable: too many sessions: all {max} (limits.sessions.total) are active, none idle to end; retry later',
  },
  sessions_per_principal: {
    code: SERVER_ERROR,
    status: 429,
    message:
      'Too Many Requests: this principal already has {max} sessions (limits.sessions.per_principal), all active; end one (DELETE) or retry later',
  },
  stream_conflict: {
    code: SERVER_ERROR,
    status: 409,
    message: 'Conflict: Only one SSE stream is allowed per session',
  },
  resume_not_found: {
    code: SERVER_ERROR,
    status: 404,
    message: 'Not Found: no stream to resume at event {event}',
  },
  instance_lost: {
    code: SERVER_ERROR,
    status: 502,
    message:
      'Bad Gateway: the hub instance running this call ({instance}) stopped before answering; the call may be retried',
  },
  session_store_unavailable: {
    code: SERVER_ERROR,
    status: 503,
    message:
      'Service Unavailable: the shared session store did not answer (cluster.limits.command_timeout_ms); the session is kept, retry later',
  },
  shutting_down: {
    code: SERVER_ERROR,
    status: 503,
    message: 'Service Unavailable: the hub is shutting down; retry on another instance or later',
  },
  unauthorized: { code: UNAUTHORIZED, status: 401, message: 'Unauthorized: {detail}' },
  insufficient_scope: { code: FORBIDDEN, status: 403, message: 'Forbidden: {detail}' },
  // ---- answers of dispatched requests ----
  method_not_found: { code: METHOD_NOT_FOUND, status: 404, message: 'Method not found: {method}' },
  invalid_params: { code: INVALID_PARAMS, status: 200, message: '{detail}' },
  invalid_cursor: { code: INVALID_PARAMS, status: 200, message: 'Invalid cursor' },
  invalid_log_level: { code: INVALID_PARAMS, status: 200, message: 'Invalid log level: {level}' },
  unknown_tool: { code: INVALID_PARAMS, status: 200, message: 'Unknown tool: {name}' },
  unknown_prompt: { code: INVALID_PARAMS, status: 200, message: 'Unknown prompt: {name}' },
  unknown_resource_modern: {
    code: INVALID_PARAMS,
    status: 200,
    message: 'Resource not found: {uri}',
  },
  unknown_resource: { code: RESOURCE_NOT_FOUND, status: 200, message: 'Resource not found: {uri}' },
  missing_client_capability: {
    code: MISSING_CLIENT_CAPABILITY,
    status: 400,
    message: 'Missing required client capability: {capabilities}',
  },
  input_state_invalid: { code: INVALID_PARAMS, status: 200, message: '{detail}' },
  subscription_limit: {
    code: INTERNAL_ERROR,
    status: 200,
    message:
      'Subscription limit reached: {max} subscriptions/listen streams are open (limits.listens.total)',
  },
  listen_limit_principal: {
    code: INTERNAL_ERROR,
    status: 200,
    message:
      'Subscription limit reached: this principal has {max} subscriptions/listen streams open (limits.listens.per_principal)',
  },
  subscriptions_per_session: {
    code: INVALID_PARAMS,
    status: 200,
    message:
      'Subscription limit reached: at most {max} resource subscriptions per session (limits.subscriptions.per_session); unsubscribe first',
  },
  client_info_too_large: {
    code: INVALID_PARAMS,
    status: 200,
    message:
      'Invalid params: clientInfo and capabilities may take at most {max} characters of JSON (limits.sessions.client_info_chars); these take {length}',
  },
  subscription_chars: {
    code: INVALID_PARAMS,
    status: 200,
    message:
      'Subscription limit reached: the URIs one session (or listen stream) subscribes to may take at most {max} characters (limits.subscriptions.chars_per_session); unsubscribe first',
  },
  client_info_too_complex: {
    code: INVALID_PARAMS,
    status: 200,
    message:
      'Invalid params: clientInfo and capabilities may hold at most {max} objects and arrays (limits.sessions.client_info_containers)',
  },
  subscription_bytes_principal: {
    code: INVALID_PARAMS,
    status: 200,
    message:
      'Subscription limit reached: the subscriptions of one principal (its sessions and listen streams) may count at most {max} bytes on this hub (limits.subscriptions.bytes_per_principal); unsubscribe or end a session first',
  },
  subscription_bytes_total: {
    code: INTERNAL_ERROR,
    status: 200,
    message:
      'Subscription limit reached: the subscriptions of all principals may count at most {max} bytes on this hub (limits.subscriptions.bytes_total); try again later',
  },
  subscription_uri_too_long: {
    code: INVALID_PARAMS,
    status: 200,
    message:
      'Invalid params: a subscribed URI may be at most {max} characters (limits.subscriptions.uri_length); this one has {length}',
  },
  stdio_in_flight: {
    code: SERVER_ERROR,
    status: 429,
    message:
      'Too many calls in flight: at most {max} requests of this stdio client run at once (limits.stdio_in_flight); wait for answers before sending more',
  },
  http_in_flight_principal: {
    code: SERVER_ERROR,
    status: 429,
    message:
      'Too many calls in flight: at most {max} HTTP requests of this principal run at once (limits.http_in_flight_per_principal); wait for answers before sending more',
  },
  name_too_long: {
    code: INVALID_PARAMS,
    status: 200,
    message:
      'Invalid params: {what} may be at most {max} characters ({key}); this one has {length}',
  },
  rate_limited: {
    code: RATE_LIMITED,
    status: 429,
    message: 'Too Many Requests: rate limit {limit} reached; retry in {retryAfterMs} ms',
  },
  stream_overflow: {
    code: SERVER_ERROR,
    status: 200,
    message:
      'Stream cut off: more than {max} bytes waited for the client to read (limits.streams.buffer_bytes); the call was aborted',
  },
  internal_error: { code: INTERNAL_ERROR, status: 500, message: 'Internal error' },
  handler_failed: { code: INTERNAL_ERROR, status: 200, message: '{detail}' },
  drain_deadline: {
    code: SERVER_ERROR,
    status: 200,
    message:
      'the hub shut down before this call finished (drain deadline of {ms} ms passed); the call was aborted',
  },
} as const satisfies Record<string, WireErrorDef>;

export type WireErrorName = keyof typeof WIRE_ERRORS;

/** An error that becomes a JSON-RPC error answer (and, over HTTP, its status). */
export class WireError extends Error {
  readonly key: WireErrorName | undefined;
  readonly code: number;
  readonly status: number;
  readonly data: unknown;
  constructor(code: number, message: string, data?: unknown, status = 200, key?: WireErrorName) {
    super(message);
    this.name = 'WireError';
    this.code = code;
    this.data = data;
    this.status = status;
    this.key = key;
  }
}

/** The registered wire error `key`, its message filled from `params`. */
export function wireError(
  key: WireErrorName,
  params?: Readonly<Record<string, unknown>>,
  data?: unknown,
): WireError {
  const def: WireErrorDef = WIRE_ERRORS[key];
  return new WireError(def.code, fill(def.message, params), data, def.status, key);
}

/** The HTTP status for a JSON-RPC code that answered a dispatched 2026-07-28 request. */
export function modernStatusOf(code: number): number {
  if (code === METHOD_NOT_FOUND) return 404;
  if (code === MISSING_CLIENT_CAPABILITY || code === HEADER_MISMATCH) return 400;
  return 200;
}
