/**
 * Refusals of the MCP endpoint: 401 with a `WWW-Authenticate: Bearer` challenge (RFC 6750, with
 * the RFC 9728 `resource_metadata` pointer in OAuth mode) and 403 `insufficient_scope`. Bodies
 * are JSON-RPC errors that say what is wrong with the credentials and nothing about the hub.
 */
import type { IncomingMessage } from 'node:http';
import type { AuthVerdict } from '../server/index.js';

const UNAUTHORIZED = -32001;

/** The bearer token of a request; '' when the header is there but not a bearer token. */
export function bearerToken(req: IncomingMessage): string | undefined {
  const header = req.headers.authorization;
  if (header === undefined) return undefined;
  const m = /^Bearer +([\x21-\x7e]+) *$/i.exec(header);
  return m ? m[1]! : '';
}

function quote(value: string): string {
  return `"${value.replace(/["\\]/g, '')}"`;
}

export interface ChallengeParams {
  realm?: string;
  error?: 'invalid_request' | 'invalid_token' | 'insufficient_scope';
  error_description?: string;
  scope?: string;
  resource_metadata?: string;
}

export function challenge(params: ChallengeParams): string {
  const parts = Object.entries(params)
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => `${k}=${quote(v as string)}`);
  return parts.length === 0 ? 'Bearer' : `Bearer ${parts.join(', ')}`;
}

export function refuse(status: 401 | 403, params: ChallengeParams, message: string): AuthVerdict {
  return {
    ok: false,
    status,
    headers: { 'WWW-Authenticate': challenge(params) },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: null,
      error: {
        code: UNAUTHORIZED,
        message: `${status === 401 ? 'Unauthorized' : 'Forbidden'}: ${message}`,
      },
    }),
  };
}
