/**
 * Refusals of the MCP endpoint: 401 with a `WWW-Authenticate: Bearer` challenge (RFC 6750, with
 * the RFC 9728 `resource_metadata` pointer in OAuth mode) and 403 `insufficient_scope`. Bodies
 * are registered errors (`unauthorized`, `insufficient_scope`) that say what is wrong with the
 * credentials and nothing about the hub.
 */
import { wireError } from '../errors.js';
import { challenge, type ChallengeParams } from '../server/bearer.js';
import type { AuthVerdict } from '../server/index.js';

export { bearerToken, challenge, type ChallengeParams } from '../server/bearer.js';

export function refuse(status: 401 | 403, params: ChallengeParams, message: string): AuthVerdict {
  const error = wireError(status === 401 ? 'unauthorized' : 'insufficient_scope', {
    detail: message,
  });
  return {
    ok: false,
    status: error.status,
    headers: { 'WWW-Authenticate': challenge(params) },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: null,
      error: { code: error.code, message: error.message },
    }),
  };
}
