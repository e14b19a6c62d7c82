/**
 * The HTTP server around the MCP endpoint: binding, the operator's routes in front of it, and a
 * close that can let answers in flight finish (graceful shutdown) before it cuts connections.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from '../registry/registry.js';
import type { HttpServerHandle, HttpServerOptions } from './http-options.js';
import { createMcpHttpHandler } from './http-server.js';
import { HttpRoutes } from './http-routes.js';
import { createRequestGuard } from './origin.js';
import { stampedResponse } from './stamped-response.js';
import { guardConnections } from './connection-guard.js';
import { resolveLimits } from './session-limits.js';

/** Starts an HTTP server with the MCP endpoint; binds 127.0.0.1 unless told otherwise. */
export function startHttpServer(
  registry: Registry,
  opts: HttpServerOptions = {},
): Promise<HttpServerHandle> {
  const handler = createMcpHttpHandler(registry, opts);
  const routes = new HttpRoutes(createRequestGuard(opts), opts.onError);
  for (const route of opts.routes ?? []) routes.add(route);
  const other = opts.otherRoutes;
  const stamp = opts.responseHeaders;
  const server = createServer(
    stamp === undefined ? {} : { ServerResponse: stampedResponse(stamp) },
    (req, res) => {
      guard.served(req);
      // No route plugged in: straight to the endpoint, as before the seam existed.
      if (routes.size > 0 && routes.dispatch(req, res)) return;
      if (other !== undefined && other(req, res)) return;
      handler.handle(req, res);
    },
  );
  const guard = guardConnections(server, resolveLimits(opts.limits), opts.refused);
  handler.connections = () => guard.open;
  const host = opts.host ?? '127.0.0.1';
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, host, () => {
      server.off('error', reject);
      const port = (server.address() as AddressInfo).port;
      const urlHost = host.includes(':') ? `[${host}]` : host === '0.0.0.0' ? '127.0.0.1' : host;
      resolve({
        url: `http://${urlHost}:${port}${opts.path ?? '/mcp'}`,
        port,
        server,
        handler,
        addRoute: (route) => routes.add(route),
        stopAccepting: () => {
          if (server.listening) server.close();
          server.closeIdleConnections();
        },
        close: (graceMs = 0) =>
          new Promise<void>((done) => {
            handler.close();
            server.close(() => done());
            if (graceMs <= 0) return server.closeAllConnections();
            closeGently(server, graceMs);
          }),
      });
    });
  });
}

/**
 * Closes each connection once it is idle (its last answer or stream end written), polling
 * briefly, and cuts the rest after `graceMs`.
 */
function closeGently(server: Server, graceMs: number): void {
  const deadline = Date.now() + graceMs;
  const tick = setInterval(() => {
    server.closeIdleConnections();
    if (Date.now() < deadline) return;
    clearInterval(tick);
    server.closeAllConnections();
  }, 25);
  server.once('close', () => clearInterval(tick));
  server.closeIdleConnections();
}
