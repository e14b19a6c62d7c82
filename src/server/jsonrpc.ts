/**
 * JSON-RPC 2.0 wire pieces shared by every transport: error codes, the error type handlers
 * throw, message classification, and response serialisation (done by string concatenation so a
 * result is stringified once, without an extra envelope object).
 */

export type JsonRpcId = string | number;

export const PARSE_ERROR = -32700;
export const INVALID_REQUEST = -32600;
export const METHOD_NOT_FOUND = -32601;
export const INVALID_PARAMS = -32602;
export const INTERNAL_ERROR = -32603;
/** Generic server-side transport error the SDK uses for session and media-type problems. */
export const SERVER_ERROR = -32000;
export const SESSION_NOT_FOUND = -32001;
/** 2025 revisions: `resources/read` of an unknown URI. */
export const RESOURCE_NOT_FOUND = -32002;
/** 2026-07-28: the standard HTTP headers disagree with the body (SEP-2243 `HeaderMismatch`). */
export const HEADER_MISMATCH = -32020;
export const MISSING_CLIENT_CAPABILITY = -32021;
export const UNSUPPORTED_PROTOCOL_VERSION = -32022;

/** An error that becomes a JSON-RPC error response; anything else thrown maps to -32603. */
export class RpcError extends Error {
  readonly code: number;
  readonly data: unknown;
  constructor(code: number, message: string, data?: unknown) {
    super(message);
    this.name = 'RpcError';
    this.code = code;
    this.data = data;
  }
}

export interface JsonRpcRequest {
  jsonrpc: '2.0';
  id: JsonRpcId;
  method: string;
  params?: Record<string, unknown>;
}

export interface JsonRpcNotification {
  jsonrpc: '2.0';
  method: string;
  params?: Record<string, unknown>;
}

export type MessageKind = 'request' | 'notification' | 'response' | 'invalid';

/**
 * Tells what a parsed value is. Checks only the envelope (jsonrpc, id, method, params shape);
 * method-specific params are checked by the method itself.
 */
export function classifyMessage(msg: unknown): MessageKind {
  if (msg === null || typeof msg !== 'object' || Array.isArray(msg)) return 'invalid';
  const m = msg as Record<string, unknown>;
  if (m.jsonrpc !== '2.0') return 'invalid';
  const method = m.method;
  if (typeof method === 'string') {
    const params = m.params;
    if (
      params !== undefined &&
      (params === null || typeof params !== 'object' || Array.isArray(params))
    ) {
      return 'invalid';
    }
    if (!('id' in m)) return 'notification';
    return isValidId(m.id) ? 'request' : 'invalid';
  }
  if (method !== undefined) return 'invalid';
  if (('result' in m || 'error' in m) && (isValidId(m.id) || m.id === null)) return 'response';
  return 'invalid';
}

function isValidId(id: unknown): id is JsonRpcId {
  return typeof id === 'string' || (typeof id === 'number' && Number.isFinite(id));
}

/** The id to echo in an error about an unusable message: its id when that is valid, else null. */
export function echoableId(msg: unknown): JsonRpcId | null {
  if (msg !== null && typeof msg === 'object' && !Array.isArray(msg)) {
    const id = (msg as Record<string, unknown>).id;
    if (isValidId(id)) return id;
  }
  return null;
}

export function serializeResult(id: JsonRpcId, result: unknown): string {
  return (
    '{"jsonrpc":"2.0","id":' + JSON.stringify(id) + ',"result":' + JSON.stringify(result) + '}'
  );
}

export function serializeError(
  id: JsonRpcId | null,
  code: number,
  message: string,
  data?: unknown,
): string {
  const error: { code: number; message: string; data?: unknown } = { code, message };
  if (data !== undefined) error.data = data;
  return '{"jsonrpc":"2.0","id":' + JSON.stringify(id) + ',"error":' + JSON.stringify(error) + '}';
}

export function serializeNotification(method: string, params?: Record<string, unknown>): string {
  return params === undefined
    ? '{"jsonrpc":"2.0","method":' + JSON.stringify(method) + '}'
    : '{"jsonrpc":"2.0","method":' +
        JSON.stringify(method) +
        ',"params":' +
        JSON.stringify(params) +
        '}';
}

/** Plain-object check used for params and `_meta`. */
export function isPlainObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}
