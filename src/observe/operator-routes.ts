/**
 * The operator's HTTP routes next to the MCP endpoint: `/healthz`, `/readyz` (no token) and
 * `/metrics` (an admin token, unless served on a separate metrics address).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { bearerToken, challenge } from '../auth/challenge.js';
import { readiness, type ReadinessSources } from './health.js';
import type { HubMetrics } from './metrics.js';
import { guardConnections } from '../server/connection-guard.js';
import { resolveLimits, type ServerLimits } from '../server/session-limits.js';

export type Route = (req: IncomingMessage, res: ServerResponse) => boolean;

export function sendJson(res: ServerResponse, status: number, body: unknown, headers = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'Content-Type': 'application/json',
    'Content-Length': String(Buffer.byteLength(text)),
    'Cache-Control': 'no-store',
    ...headers,
  });
  res.end(text);
}

/** True when the request bears an admin token; otherwise answers 401 and returns false. */
export function requireAdmin(
  req: IncomingMessage,
  res: ServerResponse,
  isAdminToken: (token: string) => boolean,
  refused?: (limit: string) => void,
): boolean {
  const token = bearerToken(req);
  if (token !== undefined && token !== '' && isAdminToken(token)) return true;
  refused?.('authentication');
  sendJson(
    res,
    401,
    { error: token === undefined ? 'an admin token is required' : 'invalid admin token' },
    {
      'WWW-Authenticate': challenge(
        token === undefined
          ? { realm: 'moonhub-admin' }
          : { realm: 'moonhub-admin', error: 'invalid_token' },
      ),
    },
  );
  return false;
}

/**
 * Runs `answer` at once, or, with `beforeCheck` (sessions shared through Redis), once it resolved:
 * the wait the MCP endpoint's token check takes (SessionSync.caughtUp), so an admin token revoked
 * through another instance, announced before this request arrived, is refused here too even when
 * a busy instance wakes with both at once. A failed wait answers 500, never the request unchecked.
 */
export function afterTokenWait(
  beforeCheck: (() => Promise<void>) | undefined,
  res: ServerResponse,
  answer: () => void,
): void {
  if (beforeCheck === undefined) return answer();
  beforeCheck()
    .then(answer)
    .catch(() => {
      if (!res.headersSent) sendJson(res, 500, { error: 'internal error' });
    });
}

export interface OperatorRouteOptions {
  metrics: HubMetrics | undefined;
  health: ReadinessSources;
  /** undefined: /metrics needs no token (a separate metrics address). */
  isAdminToken?: (token: string) => boolean;
  /** The Host/Origin check of the MCP endpoint. */
  guard?: (req: IncomingMessage) => { status: number; message: string } | undefined;
  /** Redis mode: waited for before the admin token is checked (afterTokenWait). */
  beforeCheck?: () => Promise<void>;
}

export function operatorRoutes(opts: OperatorRouteOptions): Route {
  const { metrics } = opts;
  const refused = metrics === undefined ? undefined : (limit: string) => metrics.refused(limit);
  return (req, res) => {
    const path = (req.url ?? '/').split('?', 1)[0]!;
    if (path === '/healthz') {
      req.resume();
      sendJson(res, 200, { status: 'ok' });
      return true;
    }
    if (path === '/readyz') {
      req.resume();
      const r = readiness(opts.health);
      sendJson(res, r.ready ? 200 : 503, r);
      return true;
    }
    if (path !== '/metrics' || metrics === undefined) return false;
    req.resume();
    const bad = opts.guard?.(req);
    if (bad !== undefined) {
      sendJson(res, bad.status, { error: bad.message });
      return true;
    }
    const isAdminToken = opts.isAdminToken;
    if (isAdminToken === undefined) {
      sendMetrics(metrics, res);
      return true;
    }
    afterTokenWait(opts.beforeCheck, res, () => {
      if (requireAdmin(req, res, isAdminToken, refused)) sendMetrics(metrics, res);
    });
    return true;
  };
}

function sendMetrics(metrics: HubMetrics, res: ServerResponse): void {
  metrics.text().then(
    (text) => {
      res.writeHead(200, { 'Content-Type': metrics.contentType, 'Cache-Control': 'no-store' });
      res.end(text);
    },
    () => sendJson(res, 500, { error: 'could not collect the metrics' }),
  );
}

/**
 * The separate metrics address: /metrics, /healthz and /readyz, nothing else, no token. Its
 * connections are bounded as the MCP endpoint's (`limits.connections`).
 */
export async function startMetricsServer(
  route: Route,
  host: string,
  port: number,
  limits?: Partial<ServerLimits>,
): Promise<{ server: Server; url: string; close: () => Promise<void> }> {
  const server = createServer((req, res) => {
    guard.served(req);
    if (!route(req, res)) {
      req.resume();
      sendJson(res, 404, { error: 'not found' });
    }
  });
  const guard = guardConnections(server, resolveLimits(limits));
  await new Promise<void>((ok, fail) => {
    server.once('error', fail);
    server.listen(port, host, () => ok());
  });
  const bound = (server.address() as AddressInfo).port;
  return {
    server,
    url: `http://${host.includes(':') ? `[${host}]` : host}:${bound}/metrics`,
    close: () =>
      new Promise<void>((done) => {
        server.close(() => done());
        server.closeAllConnections();
      }),
  };
}
