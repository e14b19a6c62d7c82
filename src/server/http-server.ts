/**
 * Streamable HTTP on one endpoint for both protocol eras. This transport keeps what is HTTP's
 * own: the path, Host/Origin, authentication, the body, status codes, response streams and the
 * GET/DELETE of 2025 sessions. What a message means (era, session, batch and envelope rules) is
 * the inbound layer's (`inbound.ts`).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { wireError, WireError, modernStatusOf } from '../errors.js';
import type { Registry } from '../registry/registry.js';
import { createMcpDispatcher, type McpDispatcher } from './dispatcher.js';
import { BodyBudget, BodyReader } from './http-body.js';
import { jsonShapeRefusal } from './json-shape.js';
import {
  accepted,
  headerOf,
  respond,
  respondAnswer,
  retryAfter,
  sendError,
  sendJson,
} from './http-reply.js';
import type {
  AuthVerdict,
  HttpHandlerOptions,
  HttpServerHandle,
  HttpServerOptions,
  McpHttpHandler,
} from './http-options.js';
import type { HttpRoute } from './http-routes.js';
import { Inbound, type Decision, type InboundFacts, type SessionSource } from './inbound.js';
import {
  serializeNotification,
  serializeWireError,
  type JsonRpcId,
  type JsonRpcRequest,
} from './jsonrpc.js';
import { LegacySessionStore, type LegacySession } from './legacy-sessions.js';
import { ListChangedFanout } from './list-changed.js';
import { Listens } from './listen.js';
import { createRequestGuard } from './origin.js';
import {
  HttpFacts,
  isAuthenticated,
  isJsonContentType,
  principalOf,
  setPrincipal,
} from './http-facts.js';
import { PostResponseChannel } from './post-channel.js';
import { PrincipalFlights } from './principal-flights.js';
import { DEFAULT_MAX_BODY_BYTES, LEGACY_PROTOCOL_VERSIONS } from './protocol.js';
import type { RequestScope, SessionLayer } from './session.js';
import { SseStream } from './sse.js';
import { handleDelete, handleGet, type SessionRequests } from './http-session-requests.js';

export { DEFAULT_MAX_BODY_BYTES };
export type {
  AuthVerdict,
  HttpHandlerOptions,
  HttpRoute,
  HttpServerHandle,
  HttpServerOptions,
  McpHttpHandler,
};

/** The HTTP transport of one server: a request handler over the inbound layer. */
class HttpTransport implements McpHttpHandler, SessionSource, SessionRequests {
  readonly dispatcher: McpDispatcher;
  readonly sessions: SessionLayer;
  /** Open `subscriptions/listen` streams (for metrics). */
  get listenStreams(): number {
    return this.listens.size;
  }
  readonly fanout: ListChangedFanout;
  private readonly inbound: Inbound;
  private readonly listens: Listens;
  private readonly path: string;
  private readonly guard: ReturnType<typeof createRequestGuard>;
  private readonly body: BodyReader;
  /** Requests each principal has running (limits.http_in_flight_per_principal). */
  private readonly flights: PrincipalFlights;
  private readonly removeUpdateListener: () => void;

  constructor(
    registry: Registry,
    private readonly opts: HttpHandlerOptions,
  ) {
    this.dispatcher = opts.dispatcher ?? createMcpDispatcher(registry, opts);
    this.inbound = new Inbound(this.dispatcher, opts.limits, opts.refused);
    this.path = opts.path ?? '/mcp';
    this.guard = createRequestGuard(opts);
    this.sessions = opts.sessions ?? new LegacySessionStore(opts);
    this.fanout = new ListChangedFanout(registry, opts, this.dispatcher.flow.listChangedIntervalMs);
    this.listens = new Listens(
      this.fanout,
      this.dispatcher.serverInfo,
      (l) => registry.onResourceUpdated(l),
      this.inbound.limits,
      opts.refused,
      this.sessions.subscriptionBudget,
    );
    // A subscribed resource changed: tell each 2025 session that subscribed, on its GET stream.
    this.removeUpdateListener = registry.onResourceUpdated((uri) =>
      this.sessions.bus.resourceUpdated(uri, () =>
        serializeNotification('notifications/resources/updated', { uri }),
      ),
    );
    const limits = this.inbound.limits;
    this.flights = new PrincipalFlights(limits.httpInFlightPerPrincipal, opts.refused);
    this.body = new BodyReader(
      opts.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES,
      (req, res, buf) => this.onBody(req, res, buf),
      new BodyBudget(limits.bodyBytesPerPrincipal, limits.bodyBytesTotal),
      opts.refused,
    );
    this.handle = this.handle.bind(this);
  }

  handle(req: IncomingMessage, res: ServerResponse): void {
    try {
      if (this.opts.drain?.active === true && req.method === 'GET')
        return this.shuttingDown(req, res);
      if (!this.onPath(req.url ?? '/')) return this.refuse(req, res, wireError('not_found'));
      const verdict = this.guard(req.headers);
      if (verdict !== undefined) return this.refuse(req, res, verdict);
      const authenticate = this.opts.authenticate;
      if (authenticate !== undefined && !isAuthenticated(req)) {
        const auth = authenticate(req);
        if (auth instanceof Promise)
          auth.then(
            (v) => this.authenticated(req, res, v),
            (err: unknown) => this.internalFailure(res, err),
          );
        else this.authenticated(req, res, auth);
        return;
      }
      switch (req.method) {
        case 'POST':
          if (!isJsonContentType(req.headers['content-type']))
            return this.refuse(req, res, wireError('unsupported_media_type'));
          this.body.read(req, res, principalOf(req) ?? '');
          return;
        case 'GET':
          return handleGet(this, req, res);
        case 'DELETE':
          return handleDelete(this, req, res);
        default:
          sendError(res, wireError('method_not_allowed'), null, { Allow: 'GET, POST, DELETE' });
          req.resume();
      }
    } catch (err) {
      this.internalFailure(res, err);
    }
  }

  private onPath(url: string): boolean {
    const path = this.path;
    if (url === path) return true;
    if (!url.startsWith(path)) return false;
    const next = url[path.length];
    return next === '?' || (next === '/' && url.length === path.length + 1);
  }

  /** Graceful shutdown: no new work; the client should go elsewhere on a fresh connection. */
  private shuttingDown(
    req: IncomingMessage,
    res: ServerResponse,
    id: JsonRpcId | null = null,
  ): void {
    this.opts.refused?.('shutting_down');
    sendError(res, wireError('shutting_down'), id, { Connection: 'close', 'Retry-After': '1' });
    req.resume();
  }

  private refuse(req: IncomingMessage, res: ServerResponse, error: WireError): void {
    sendError(res, error);
    req.resume();
  }

  /** Goes on with an authenticated request (handle() again, now with its principal set). */
  private authenticated(req: IncomingMessage, res: ServerResponse, verdict: AuthVerdict): void {
    if (!verdict.ok) {
      res.writeHead(verdict.status, {
        'Content-Type': 'application/json',
        'Content-Length': String(Buffer.byteLength(verdict.body)),
        ...verdict.headers,
      });
      res.end(verdict.body);
      req.resume();
      return;
    }
    setPrincipal(req, verdict.principal);
    this.handle(req, res);
  }

  internalFailure(res: ServerResponse, err: unknown): void {
    // A refusal with its own answer (the shared session store not answering, say).
    if (err instanceof WireError && !res.headersSent) return sendError(res, err);
    this.opts.onError?.(err);
    if (!res.headersSent) sendError(res, wireError('internal_error'));
    else res.destroy();
  }

  // ---- POST --------------------------------------------------------------------------------

  private onBody(req: IncomingMessage, res: ServerResponse, buf: Buffer): void {
    const text = buf.toString('utf8');
    const limits = this.inbound.limits;
    const refusal = jsonShapeRefusal(
      text,
      limits.jsonDepth,
      limits.jsonContainers,
      limits.jsonObjectKeys,
    );
    if (refusal !== undefined) {
      this.opts.refused?.('json');
      return sendError(res, refusal);
    }
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      sendError(res, wireError('parse_error'));
      return;
    }
    // Cluster modes: the session may have been opened (or changed) by another process.
    const sid = this.sessions.shared === undefined ? undefined : headerOf(req, 'mcp-session-id');
    if (sid !== undefined && sid !== '') {
      this.sessions.shared!.load(sid).then(
        () => this.post(req, res, body),
        (err: unknown) => this.internalFailure(res, err),
      );
      return;
    }
    this.post(req, res, body);
  }

  /**
   * Decides one parsed body and sends it on its way. Synchronous up to the dispatch: a single
   * request costs one promise of ours (the dispatcher's answer), not an async frame per layer.
   */
  private post(req: IncomingMessage, res: ServerResponse, body: unknown): void {
    try {
      this.decided(req, res, this.inbound.decide(body, new HttpFacts(req), this));
    } catch (err) {
      this.internalFailure(res, err);
    }
  }

  private decided(req: IncomingMessage, res: ServerResponse, decision: Decision): void {
    // Draining: answers to server requests and notifications still get through (calls in
    // flight may wait on them); new work is refused.
    if (
      this.opts.drain?.active === true &&
      decision.kind !== 'reject' &&
      decision.kind !== 'handled'
    )
      return this.shuttingDown(req, res, decision.kind === 'batch' ? null : decision.msg.id);
    switch (decision.kind) {
      case 'reject':
        return sendError(res, decision.error, decision.id, retryAfter(decision.error));
      case 'handled':
        return accepted(res);
      case 'listen':
        return this.listen(req, res, decision.msg, decision.scope);
      case 'request': {
        const full = this.flights.take(decision.scope.principal, 1);
        if (full !== undefined) return sendError(res, full, decision.msg.id, retryAfter(full));
        return this.answer(req, res, decision);
      }
      case 'batch': {
        // Counted by members, as on stdio; held until the batch's answer is out.
        const { principal } = decision.scope;
        const n = decision.members.length;
        const full = this.flights.take(principal, n);
        if (full !== undefined) return sendError(res, full, null, retryAfter(full));
        this.batch(req, res, decision)
          .catch((err: unknown) => this.internalFailure(res, err))
          .finally(() => this.flights.release(principal, n));
        return;
      }
    }
  }

  private async batch(
    req: IncomingMessage,
    res: ServerResponse,
    decision: Extract<Decision, { kind: 'batch' }>,
  ): Promise<void> {
    const session = decision.scope.session as LegacySession;
    const out = this.inbound.runBatch(
      decision,
      () => new PostResponseChannel(res, req, session, this.dispatcher.flow, false),
    );
    if (out === undefined) return accepted(res);
    const joined = await out;
    await this.commit(session);
    if (!res.destroyed) respond(req, res, joined, { 'Mcp-Session-Id': session.id });
  }

  private answer(
    req: IncomingMessage,
    res: ServerResponse,
    decision: Extract<Decision, { kind: 'request' }>,
  ): void {
    const { msg, scope } = decision;
    const session = scope.session as LegacySession | undefined;
    const channel = new PostResponseChannel(res, req, session, this.dispatcher.flow, true, msg.id);
    let out: Promise<string>;
    try {
      out = this.inbound.dispatch(decision, channel);
    } catch (err) {
      this.flights.release(scope.principal, 1);
      throw err;
    }
    if (session !== undefined && this.sessions.shared !== undefined) {
      this.answerShared(req, res, decision, channel, out).catch((err: unknown) =>
        this.internalFailure(res, err),
      );
      return;
    }
    // The call ended, however it did: its place is given back before anything else can fail.
    out.then(
      (json) => {
        this.flights.release(scope.principal, 1);
        try {
          this.reply(req, res, scope, channel, json);
        } catch (err) {
          this.internalFailure(res, err);
        }
      },
      (err: unknown) => {
        this.flights.release(scope.principal, 1);
        this.internalFailure(res, err);
      },
    );
  }

  /** Cluster modes: the session's changes are committed to the shared records before the answer. */
  private async answerShared(
    req: IncomingMessage,
    res: ServerResponse,
    decision: Extract<Decision, { kind: 'request' }>,
    channel: PostResponseChannel,
    pending: Promise<string>,
  ): Promise<void> {
    let out: string;
    try {
      out = await pending;
    } finally {
      this.flights.release(decision.scope.principal, 1);
    }
    const refused = await this.commit(decision.scope.session as LegacySession);
    if (refused !== undefined && !channel.streaming)
      return sendError(res, refused, decision.msg.id);
    this.reply(req, res, decision.scope, channel, out);
  }

  /** Writes one request's answer: the stream's last event, or the JSON (or one-event SSE) reply. */
  private reply(
    req: IncomingMessage,
    res: ServerResponse,
    scope: RequestScope,
    channel: PostResponseChannel,
    out: string,
  ): void {
    if (channel.streaming) return channel.finish(out);
    if (res.destroyed) return;
    // 2026-07-28 over HTTP: some error codes carry their own status (404, 400).
    if (scope.era === 'modern' && channel.errorCode !== undefined) {
      const status = modernStatusOf(channel.errorCode);
      if (status !== 200) return sendJson(res, status, out);
    }
    respondAnswer(req, res, out, (scope.session as LegacySession | undefined)?.id);
  }

  /** Cluster modes: writes what a request changed in its session to the shared records. */
  private async commit(session: LegacySession): Promise<WireError | undefined> {
    const shared = this.sessions.shared;
    if (shared === undefined) return undefined;
    try {
      return await shared.commit(session);
    } catch (err) {
      // The store unreachable: this process goes on serving the session it holds.
      this.opts.onError?.(err);
      return undefined;
    }
  }

  private listen(
    req: IncomingMessage,
    res: ServerResponse,
    msg: JsonRpcRequest,
    scope: RequestScope,
  ): void {
    const refused = this.listens.subscribe(
      msg.id,
      msg.params,
      scope.principal,
      (closed) => new SseStream(res, {}, closed, this.dispatcher.flow),
    );
    if (refused !== undefined) sendJson(res, 200, serializeWireError(msg.id, refused));
  }

  // ---- sessions (SessionSource) ------------------------------------------------------------

  open(facts: InboundFacts): LegacySession | WireError {
    return (
      this.sessions.create(facts.principal) ??
      wireError('too_many_sessions', { max: this.sessions.maxSessions })
    );
  }

  /** The request's 2025 session, or the error for a missing, unknown or foreign one. */
  find(facts: InboundFacts): LegacySession | WireError {
    const headers = facts.headers!;
    const sidHeader = headers['mcp-session-id'];
    const sid = Array.isArray(sidHeader) ? sidHeader[0] : sidHeader;
    if (sid === undefined || sid === '') return wireError('session_id_required');
    const session = this.sessions.touch(sid);
    // A session used by another principal than its creator's is, to that caller, not there.
    if (session === undefined || session.principal !== facts.principal)
      return wireError('session_not_found');
    const pvHeader = headers['mcp-protocol-version'];
    const pv = Array.isArray(pvHeader) ? pvHeader[0] : pvHeader;
    if (pv !== undefined && !LEGACY_PROTOCOL_VERSIONS.includes(pv.trim()))
      return wireError('session_version_header', {
        version: pv,
        supported: LEGACY_PROTOCOL_VERSIONS.join(', '),
      });
    return session;
  }

  principalOf(req: IncomingMessage): string | undefined {
    return principalOf(req);
  }

  sessionOf(req: IncomingMessage, res: ServerResponse): LegacySession | undefined {
    const found = this.find(new HttpFacts(req));
    if (!(found instanceof WireError)) return found;
    sendError(res, found);
    return undefined;
  }

  close(): void {
    this.removeUpdateListener();
    this.listens.closeAll();
    this.sessions.closeAll();
    this.fanout.close();
  }
}

export function createMcpHttpHandler(
  registry: Registry,
  opts: HttpHandlerOptions = {},
): McpHttpHandler {
  return new HttpTransport(registry, opts);
}
