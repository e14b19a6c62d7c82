/**
 * The local half of the error registry (errors.ts holds the wire half and re-exports this one):
 * errors that stay inside the process, each code defined once with its message and meaning.
 */
import { fill } from './error-template.js';

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
