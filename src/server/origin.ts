/**
 * DNS-rebinding protection: the Host header must name this server (localhost by default) and a
 * browser's Origin header, when present, must be an allowed origin. Checked before any body is read.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { wireError, type WireError } from '../errors.js';

export interface OriginPolicy {
  /** Extra hostnames (without port) accepted in Host, besides localhost/127.0.0.1/[::1]. */
  allowedHosts?: string[];
  /** Extra exact origins (`https://app.example.com`) accepted besides http(s)://localhost-ish:any. */
  allowedOrigins?: string[];
  /** Accept any Host (when a proxy in front already checks it). */
  anyHost?: boolean;
}

const LOCAL_HOSTNAMES = ['localhost', '127.0.0.1', '[::1]'];
const LOCAL_ORIGIN = /^https?:\/\/(?:localhost|127\.0\.0\.1|\[::1\])(?::\d{1,5})?$/i;

/** Splits `host[:port]` (with bracketed IPv6) into its lowercased hostname; undefined when malformed. */
export function hostnameOf(host: string): string | undefined {
  const m = /^(\[[0-9a-f:.]+\]|[a-z0-9.-]+)(?::(\d{1,5}))?$/i.exec(host);
  if (!m) return undefined;
  if (m[2] !== undefined && Number(m[2]) > 65535) return undefined;
  return m[1]!.toLowerCase();
}

/** Undefined when the request may go on; else the registered refusal (status and message). */
export type GuardVerdict = undefined | WireError;

export function createRequestGuard(
  policy: OriginPolicy = {},
): (headers: IncomingHttpHeaders) => GuardVerdict {
  const hosts = new Set([
    ...LOCAL_HOSTNAMES,
    ...(policy.allowedHosts ?? []).map((h) => h.toLowerCase()),
  ]);
  const origins = new Set(
    (policy.allowedOrigins ?? []).map((o) => o.toLowerCase().replace(/\/$/, '')),
  );
  const anyHost = policy.anyHost === true;
  // The last Host value accepted: a client sends the same one on every request, so the parse
  // runs once per distinct value in a row (one string held, whatever clients send).
  let acceptedHost: string | undefined;
  return (headers) => {
    if (!anyHost) {
      const host = headers.host;
      if (host === undefined || host !== acceptedHost) {
        const name = host === undefined ? undefined : hostnameOf(host);
        if (name === undefined || !hosts.has(name)) {
          return wireError('forbidden_host', { host: host ? `: ${host}` : '' });
        }
        acceptedHost = host;
      }
    }
    const origin = headers.origin;
    if (origin !== undefined && !LOCAL_ORIGIN.test(origin) && !origins.has(origin.toLowerCase())) {
      return wireError('forbidden_origin', { origin });
    }
    return undefined;
  };
}
