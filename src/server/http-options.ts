/** The HTTP transport's options and handles (its seams: authentication, routes, sessions). */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { DispatcherOptions, McpDispatcher } from './dispatcher.js';
import type { Drain } from './drain.js';
import type { HttpRoute } from './http-routes.js';
import type { SessionStoreOptions } from './legacy-sessions.js';
import type { FanoutOptions, ListChangedFanout } from './list-changed.js';
import type { OriginPolicy } from './origin.js';
import type { SessionLayer } from './session.js';

/** What `HttpHandlerOptions.authenticate` decided: who is calling, or the refusal to send. */
export type AuthVerdict =
  | { ok: true; principal: string | undefined }
  | { ok: false; status: number; headers?: Record<string, string>; body: string };

export interface HttpHandlerOptions
  extends DispatcherOptions, OriginPolicy, SessionStoreOptions, FanoutOptions {
  /** The MCP endpoint path (default `/mcp`). */
  path?: string;
  /**
   * Authentication, after the Host/Origin check and before anything else. The principal rides
   * in the RequestScope; a 2025 session belongs to the principal that created it. Default: none.
   */
  authenticate?: (req: IncomingMessage) => AuthVerdict | Promise<AuthVerdict>;
  /** Largest accepted POST body in bytes (default 4 MiB). */
  maxBodyBytes?: number;
  /** Reuse a dispatcher (e.g. shared with stdio); otherwise one is made from the options. */
  dispatcher?: McpDispatcher;
  /** The session layer (default: the in-process `LegacySessionStore`). */
  sessions?: SessionLayer;
  /** Graceful shutdown: once it is active, new requests and streams get 503 `shutting_down`. */
  drain?: Drain;
}

export interface HttpServerOptions extends HttpHandlerOptions {
  /** Interface to bind (default 127.0.0.1). */
  host?: string;
  /** Extra routes answered before the MCP endpoint (see http-routes.ts). */
  routes?: HttpRoute[];
  /** Answers requests outside the MCP endpoint (admin API, metadata); true when it answered. */
  otherRoutes?: (req: IncomingMessage, res: ServerResponse) => boolean;
  /** Port (default 0: any free port). */
  port?: number;
  /**
   * Headers on every response of this server, MCP endpoint and operator routes alike (the
   * cluster modes' `X-Moonhub-Instance`); written with each head, not set per request.
   */
  responseHeaders?: Record<string, string>;
}

export interface McpHttpHandler {
  /** Handles one request on the MCP endpoint; answers 404 for other paths. */
  handle(req: IncomingMessage, res: ServerResponse): void;
  readonly dispatcher: McpDispatcher;
  readonly sessions: SessionLayer;
  readonly fanout: ListChangedFanout;
  /** Open `subscriptions/listen` streams (for metrics). */
  readonly listenStreams: number;
  /** Open TCP connections of the server around it (metrics); set by `startHttpServer`. */
  connections?: () => number;
  /** Ends every stream and session; the listen streams get their graceful-close result. */
  close(): void;
}

export interface HttpServerHandle {
  url: string;
  port: number;
  server: Server;
  handler: McpHttpHandler;
  /** Adds a route before the MCP endpoint; returns its remover. */
  addRoute(route: HttpRoute): () => void;
  /** Stops listening (graceful shutdown); kept-alive connections are refused by `drain`. */
  stopAccepting(): void;
  /**
   * Ends every stream and session, then the connections: at once, or (graceMs > 0) once their
   * last bytes went out, cutting what is still open after graceMs.
   */
  close(graceMs?: number): Promise<void>;
}
