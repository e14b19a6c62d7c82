/**
 * The error registry: every error the hub sends on the wire (JSON-RPC code, HTTP status, message
 * template) and every local error code, each defined once, here. Code throws through `wireError`
 * (or the local error classes, whose codes are typed from `LOCAL_ERRORS`); `docs/errors.md`
 * lists the same table and a test keeps the two in step. Nothing here imports anything, so every
 * floor of the house may use it.
 */

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

/** Fills `{slot}`s of a template; a missing slot becomes empty. */
function fill(template: string, params: Readonly<Record<string, unknown>> | undefined): string {
  if (params === undefined || template.indexOf('{') === -1) return template;
  return template.replace(/\{(\w+)\}/g, (_, k: string) =>
    params[k] === undefined ? '' : String(params[k]),
  );
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

/**
 * Local error codes: errors that stay inside the process. Lua code sees them as Lua errors or
 * `nil, err`; the server maps the registry's onto wire errors (dispatcher.ts). Each has its
 * message template and what it means.
 */
export const LOCAL_ERRORS = {
  // ---- the registry (RegistryError) ----
  unknown_tool: ['Unknown tool: {name}', 'no tool of that name is visible to the caller'],
  unknown_prompt: ['Unknown prompt: {name}', 'no prompt of that name is visible to the caller'],
  unknown_resource: [
    'Resource not found: {uri}',
    'no resource or template matches the URI for the caller',
  ],
  invalid_arguments: ['{detail}', 'arguments do not match the schema of the tool or prompt'],
  invalid_definition: ['{detail}', 'a tool, prompt or resource definition is malformed'],
  batch_mismatch: ['{detail}', 'end_batch without a matching begin_batch'],
  not_implemented: ['{detail}', 'the entry has no handler for this operation'],
  handler_failed: [
    '{detail}',
    'a prompt, resource or completion handler raised: the client gets its message (-32603)',
  ],
  // ---- the Lua limits (LuaLimitError) ----
  timeout: ['timeout: {detail}', 'a Lua call ran past its time limit'],
  instructions: [
    'instruction budget exceeded: {detail}',
    'a Lua call ran past its instruction budget',
  ],
  memory: ['memory limit exceeded: {detail}', 'a Lua state reached its memory ceiling'],
  // ---- a handler talking back to its client (server/call-peer.ts, channel.ts) ----
  peer_method_invalid: [
    '{method} is not a request a server may send',
    'ctx.peer.request with a method other than sampling, elicitation or roots',
  ],
  peer_capability_missing: [
    "the client did not declare the '{capability}' capability, so it cannot answer",
    'the caller cannot answer this kind of server request',
  ],
  peer_input_method: [
    'only tools/call, prompts/get and resources/read may ask the client for input',
    '2026-07-28: input requests from another method',
  ],
  peer_no_session: [
    'this request has no session to carry a server request',
    '2025: a server request outside a session',
  ],
  peer_no_stream: [
    'the client cannot receive requests during this call (its request accepts no event stream)',
    "2025 over HTTP: the request's Accept has no text/event-stream",
  ],
  peer_client_error: [
    'the client answered with an error: {message}',
    'the client refused a server request',
  ],
  peer_unanswered: [
    'the call ended before the client answered',
    'a server request outlived its call',
  ],
  input_required: [
    'the client must answer input requests first',
    '2026-07-28: the call stops where it asked; its answer is `input_required`',
  ],
  // ---- why a call was aborted (its signal's reason) ----
  call_ended: ['call ended', 'the call answered; its unanswered server requests are dropped'],
  cancelled: ['{reason}', 'the client cancelled the call (its reason, or "cancelled")'],
  session_ended: ['session ended', 'the 2025 session ended (DELETE, expiry, revocation)'],
  client_disconnected: ['client disconnected', "the HTTP request's connection closed early"],
  stream_forgotten: [
    'the client did not come back for its event stream before it was forgotten ({limit})',
    '2025-11-25: a resumable stream without a client was dropped for a bound (limits.streams.parked_bytes_per_principal or parked_bytes_total, or 64 per session)',
  ],
  transport_closed: ['stdio closed', "the stdio peer's input ended"],
  shutdown: [
    'hub shutting down',
    "the hub's drain deadline passed while the call ran (SIGTERM/SIGINT)",
  ],
  // ---- proxied calls (upstream/direct-http.ts) ----
  upstream_answer_too_large: [
    'the upstream answer is larger than {max} bytes (plugin_limits.upstream_answer_bytes)',
    "a proxied call's answer (its JSON body, or one event of its stream) passed the bound: the call fails, the upstream stays connected",
  ],
  handler_result_invalid: [
    '{method} handler returned a non-object result',
    'a method handler bug (answers internal_error)',
  ],
} as const satisfies Record<string, readonly [message: string, meaning: string]>;

export type LocalErrorCode = keyof typeof LOCAL_ERRORS;
/** The local codes the registry raises (`RegistryError.code`). */
export type RegistryErrorCode =
  | 'unknown_tool'
  | 'unknown_prompt'
  | 'unknown_resource'
  | 'invalid_arguments'
  | 'invalid_definition'
  | 'batch_mismatch'
  | 'handler_failed'
  | 'not_implemented';
/** The local codes of the Lua limits (`LuaLimitError.limit`). */
export type LuaLimit = 'timeout' | 'instructions' | 'memory';

/** A local error with its registered code. */
export class LocalError extends Error {
  readonly code: LocalErrorCode;
  constructor(code: LocalErrorCode, message: string) {
    super(message);
    this.name = 'LocalError';
    this.code = code;
  }
}

/** The registered local error `code`, its message filled from `params`. */
export function localError(
  code: LocalErrorCode,
  params?: Readonly<Record<string, unknown>>,
): LocalError {
  return new LocalError(code, fill(LOCAL_ERRORS[code][0], params));
}
