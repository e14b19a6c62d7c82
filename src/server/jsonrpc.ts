/**
 * JSON-RPC 2.0 wire pieces shared by every transport: message classification and response
 * serialisation (done by string concatenation so a
 * result is stringified once, without an extra envelope object).
 */

import type { WireError } from '../errors.js';

export type JsonRpcId = string | number;

// The codes and the error type live in the error registry; re-exported for the server's modules.
export {
  HEADER_MISMATCH,
  INTERNAL_ERROR,
  INVALID_PARAMS,
  INVALID_REQUEST,
  METHOD_NOT_FOUND,
  MISSING_CLIENT_CAPABILITY,
  PARSE_ERROR,
  RESOURCE_NOT_FOUND,
  SERVER_ERROR,
  SESSION_NOT_FOUND,
  UNSUPPORTED_PROTOCOL_VERSION,
  WireError,
  wireError,
} from '../errors.js';

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

/** A registered error as a JSON-RPC error answer. */
export function serializeWireError(id: JsonRpcId | null, err: WireError): string {
  return serializeError(id, err.code, err.message, err.data);
}
