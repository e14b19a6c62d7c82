/**
 * The routes seam: extra HTTP routes answered before the MCP endpoint (`/metrics`, `/healthz`,
 * `/readyz`, a dashboard at `/`, the admin API...), plugged in through the server's options or
 * `addRoute` without touching the MCP handler. Exact paths are one Map lookup; prefixes are
 * tried longest first. A route is behind the Host/Origin check unless it says otherwise.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { wireError } from '../errors.js';
import { sendError } from './http-reply.js';
import type { GuardVerdict } from './origin.js';

export interface HttpRoute {
  /** The path (`/metrics`), or with `prefix` a path prefix (`/dashboard/`). */
  readonly path: string;
  readonly prefix?: boolean;
  /** Methods answered (default GET and HEAD); others get 405. */
  readonly methods?: readonly string[];
  /** Skip the Host/Origin check (a health probe from a load balancer with its own Host). */
  readonly public?: boolean;
  /** Answers the request; `path` is the URL without its query. */
  handle(req: IncomingMessage, res: ServerResponse, path: string): void | Promise<void>;
}

const DEFAULT_METHODS: readonly string[] = ['GET', 'HEAD'];

export class HttpRoutes {
  private readonly exact = new Map<string, HttpRoute>();
  private prefixes: HttpRoute[] = [];

  constructor(
    private readonly guard: (headers: IncomingMessage['headers']) => GuardVerdict,
    private readonly onError: (err: unknown) => void = () => {},
  ) {}

  get size(): number {
    return this.exact.size + this.prefixes.length;
  }

  /** Adds a route; returns its remover. A later route for the same path replaces the earlier. */
  add(route: HttpRoute): () => void {
    if (route.prefix) {
      this.prefixes = [...this.prefixes.filter((r) => r.path !== route.path), route].sort(
        (a, b) => b.path.length - a.path.length,
      );
    } else this.exact.set(route.path, route);
    return () => {
      if (route.prefix) this.prefixes = this.prefixes.filter((r) => r !== route);
      else if (this.exact.get(route.path) === route) this.exact.delete(route.path);
    };
  }

  /** Answers `req` when a route matches it; false leaves it to the MCP endpoint. */
  dispatch(req: IncomingMessage, res: ServerResponse): boolean {
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const path = q === -1 ? url : url.slice(0, q);
    let route = this.exact.get(path);
    if (route === undefined) {
      for (const r of this.prefixes) {
        if (path.startsWith(r.path)) {
          route = r;
          break;
        }
      }
      if (route === undefined) return false;
    }
    if (!route.public) {
      const verdict = this.guard(req.headers);
      if (verdict !== undefined) {
        sendError(res, verdict);
        req.resume();
        return true;
      }
    }
    const methods = route.methods ?? DEFAULT_METHODS;
    if (!methods.includes(req.method ?? 'GET')) {
      sendError(res, wireError('method_not_allowed'), null, { Allow: methods.join(', ') });
      req.resume();
      return true;
    }
    try {
      const done = route.handle(req, res, path);
      if (done instanceof Promise) done.catch((err: unknown) => this.failed(res, err));
    } catch (err) {
      this.failed(res, err);
    }
    return true;
  }

  private failed(res: ServerResponse, err: unknown): void {
    this.onError(err);
    if (!res.headersSent) sendError(res, wireError('internal_error'));
    else res.destroy();
  }
}
