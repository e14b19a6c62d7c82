/**
 * The HTTP Bearer scheme (RFC 6750): reading a request's bearer token and writing a
 * `WWW-Authenticate` challenge. Below sessions/ and auth/, which both answer with it.
 */
import type { IncomingMessage } from 'node:http';

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
