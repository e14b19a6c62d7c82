/**
 * What the HTTP transport knows of one request besides its body: who it acts for (set once the
 * request is authenticated) and its headers, as the inbound layer reads them.
 */
import type { IncomingMessage } from 'node:http';
import type { InboundFacts } from './inbound.js';

const PRINCIPAL = Symbol('moonhub.principal');
type AuthedRequest = IncomingMessage & { [PRINCIPAL]?: string };

/** True once the request was authenticated (its principal may still be undefined). */
export function isAuthenticated(req: IncomingMessage): boolean {
  return PRINCIPAL in req;
}

/** Records who an authenticated request acts for. */
export function setPrincipal(req: IncomingMessage, principal: string | undefined): void {
  (req as AuthedRequest)[PRINCIPAL] = principal;
}

/** Who the request acts for, if anyone in particular. */
export function principalOf(req: IncomingMessage): string | undefined {
  return (req as AuthedRequest)[PRINCIPAL];
}

/** The facts of one HTTP request, as the inbound layer reads them. */
export class HttpFacts implements InboundFacts {
  readonly transport = 'http' as const;
  constructor(readonly req: IncomingMessage) {}
  get headers() {
    return this.req.headers;
  }
  get principal(): string | undefined {
    return principalOf(this.req);
  }
}

export function isJsonContentType(ct: string | undefined): boolean {
  if (ct === undefined) return false;
  const semi = ct.indexOf(';');
  return (semi === -1 ? ct : ct.slice(0, semi)).trim().toLowerCase() === 'application/json';
}
