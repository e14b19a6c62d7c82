/**
 * Which era a message belongs to: the 2026-07-28 stateless revision (a per-request `_meta`
 * envelope, cross-checked against the MCP-Protocol-Version, Mcp-Method and Mcp-Name headers where
 * the transport has headers) or the 2025 session revisions. Rejections are registered errors.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { wireError, type WireError } from '../errors.js';
import { isPlainObject } from './jsonrpc.js';
import {
  CLIENT_CAPABILITIES_META_KEY,
  MCP_NAME_SOURCE,
  MODERN_PROTOCOL_VERSIONS,
  PROTOCOL_VERSION_META_KEY,
  decodeHeaderValue,
  isModernVersion,
} from './protocol.js';

export type EraRoute =
  | { kind: 'legacy' }
  | { kind: 'modern'; version: string; clientCapabilities: Record<string, unknown> | undefined }
  | { kind: 'reject'; error: WireError };

export function header(headers: IncomingHttpHeaders, name: string): string | undefined {
  const v = headers[name];
  if (v === undefined) return undefined;
  return (Array.isArray(v) ? v[0]! : v).trim();
}

export function mismatchError(detail: string, headerValue: string): WireError {
  return wireError(
    'header_mismatch',
    { detail },
    { mismatch: { header: headerValue, body: detail } },
  );
}

function mismatch(detail: string, headerValue: string): EraRoute {
  return { kind: 'reject', error: mismatchError(detail, headerValue) };
}

function badEnvelope(detail: string, data: unknown): EraRoute {
  return { kind: 'reject', error: wireError('invalid_envelope', { detail }, data) };
}

/**
 * Routes one request or notification (not a response or batch) to an era. The body's `_meta`
 * envelope decides; over HTTP the `MCP-Protocol-Version` header cross-checks it, and 2026
 * requests must also carry `Mcp-Method` and, for named methods, `Mcp-Name`. `headers` is
 * undefined for transports without headers (stdio): the envelope alone decides.
 */
export function eraOf(
  msg: { method: string; params?: Record<string, unknown> },
  isRequest: boolean,
  headers: IncomingHttpHeaders | undefined,
): EraRoute {
  if (headers === undefined) return envelopeEra(msg, isRequest);
  const method = msg.method;
  const params = msg.params;
  const pv = header(headers, 'mcp-protocol-version');
  const mm = header(headers, 'mcp-method');
  const pvModern = pv !== undefined && isModernVersion(pv);
  const meta = params !== undefined && isPlainObject(params._meta) ? params._meta : undefined;
  const hasClaim = meta !== undefined && PROTOCOL_VERSION_META_KEY in meta;

  if (!hasClaim) {
    if (isRequest && method === 'initialize') {
      return pvModern
        ? mismatch('an initialize request was sent with a modern MCP-Protocol-Version header', pv)
        : LEGACY;
    }
    if (!pvModern) return LEGACY;
    if (!isRequest) {
      if (mm !== undefined && mm !== method)
        return mismatch(`the body names method ${method} but Mcp-Method names ${mm}`, mm);
      return modernOrUnsupported(pv, undefined);
    }
    const missing = meta === undefined ? ['_meta'] : [PROTOCOL_VERSION_META_KEY];
    return badEnvelope(
      `Invalid params: the MCP-Protocol-Version header names protocol revision ${pv}, but the request is missing the required per-request envelope key(s): ${missing.join(', ')}`,
      { envelope: { missing } },
    );
  }

  const claimed = meta[PROTOCOL_VERSION_META_KEY];
  if (typeof claimed !== 'string') return claimProblem();
  const caps = meta[CLIENT_CAPABILITIES_META_KEY];
  if (isRequest && !isPlainObject(caps)) return capsProblem(caps);
  if (pv !== undefined && pv !== claimed) {
    return mismatch(
      `the body envelope names protocol version ${claimed} but the MCP-Protocol-Version header names ${pv}`,
      pv,
    );
  }
  if (mm !== undefined && mm !== method) {
    return mismatch(`the body names method ${method} but the Mcp-Method header names ${mm}`, mm);
  }
  if (!isModernVersion(claimed)) {
    // An envelope naming a 2025 revision: serve it the 2025 way.
    return LEGACY;
  }
  if (isRequest) {
    if (pv === undefined) {
      return mismatch(
        `the body envelope names protocol version ${claimed} but the required MCP-Protocol-Version header is absent`,
        '(missing)',
      );
    }
    if (mm === undefined) {
      return mismatch(
        `the body names method ${method} but the required Mcp-Method header is absent`,
        '(missing)',
      );
    }
    const bad = nameHeaderProblem(method, params!, headers);
    if (bad !== undefined) return bad;
  }
  return modernOrUnsupported(claimed, isPlainObject(caps) ? caps : undefined);
}

const LEGACY: EraRoute = { kind: 'legacy' };

function modernOrUnsupported(version: string, caps: Record<string, unknown> | undefined): EraRoute {
  if (MODERN_PROTOCOL_VERSIONS.includes(version))
    return { kind: 'modern', version, clientCapabilities: caps };
  return {
    kind: 'reject',
    error: wireError(
      'unsupported_protocol_version',
      { version },
      { supported: [...MODERN_PROTOCOL_VERSIONS], requested: version },
    ),
  };
}

/** The era of a message on a transport without headers: its envelope's claim alone. */
function envelopeEra(
  msg: { method: string; params?: Record<string, unknown> },
  isRequest: boolean,
): EraRoute {
  const params = msg.params;
  const meta = params !== undefined && isPlainObject(params._meta) ? params._meta : undefined;
  if (meta === undefined || !(PROTOCOL_VERSION_META_KEY in meta)) return LEGACY;
  const claimed = meta[PROTOCOL_VERSION_META_KEY];
  if (typeof claimed !== 'string') return claimProblem();
  if (!isModernVersion(claimed)) return LEGACY;
  const caps = meta[CLIENT_CAPABILITIES_META_KEY];
  if (!isRequest) return modernOrUnsupported(claimed, undefined);
  const route = modernOrUnsupported(claimed, isPlainObject(caps) ? caps : undefined);
  if (route.kind === 'modern' && !isPlainObject(caps)) return capsProblem(caps);
  return route;
}

function claimProblem(): EraRoute {
  return badEnvelope(
    `Invalid _meta envelope for protocol revision 2026-07-28: ${PROTOCOL_VERSION_META_KEY}: expected a protocol version string`,
    { envelope: { key: PROTOCOL_VERSION_META_KEY, problem: 'expected a protocol version string' } },
  );
}

function capsProblem(caps: unknown): EraRoute {
  const problem = caps === undefined ? 'missing' : 'expected an object';
  return badEnvelope(
    `Invalid _meta envelope for protocol revision 2026-07-28: ${CLIENT_CAPABILITIES_META_KEY}: ${problem}`,
    { envelope: { key: CLIENT_CAPABILITIES_META_KEY, problem } },
  );
}

/** 2026-07-28: the `Mcp-Name` header must mirror the name or URI the body carries. */
function nameHeaderProblem(
  method: string,
  params: Record<string, unknown>,
  headers: IncomingHttpHeaders,
): EraRoute | undefined {
  const field = Object.hasOwn(MCP_NAME_SOURCE, method) ? MCP_NAME_SOURCE[method] : undefined;
  if (field === undefined) return undefined;
  const bodyValue = typeof params[field] === 'string' ? (params[field] as string) : undefined;
  const mn = header(headers, 'mcp-name');
  if (mn === undefined) {
    return bodyValue === undefined
      ? undefined
      : mismatch(
          `the body carries params.${field}="${bodyValue}" but the required Mcp-Name header is absent`,
          '(missing)',
        );
  }
  const decoded = decodeHeaderValue(mn);
  if (decoded === undefined)
    return mismatch('the Mcp-Name header carries an invalid Base64 sentinel value', mn);
  if (bodyValue !== undefined && decoded !== bodyValue) {
    return mismatch(
      `the body carries params.${field}="${bodyValue}" but the Mcp-Name header names "${decoded}"`,
      mn,
    );
  }
  return undefined;
}
