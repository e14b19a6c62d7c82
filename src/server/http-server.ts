/**
 * Streamable HTTP on one endpoint for both protocol eras: a node:http request handler that reads
 * and parses the body once, checks Host/Origin, routes 2026-07-28 stateless requests and 2025
 * session requests to the shared dispatcher, and serves the GET/listen notification streams.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from '../registry/registry.js';
import { RequestChannel } from './call-peer.js';
import { DEFAULT_RETRY_MS, ResumableStreams, type ResumableStream } from './resumable.js';
import {
  createMcpDispatcher,
  type DispatcherOptions,
  type McpDispatcher,
  type RequestScope,
} from './dispatcher.js';
import {
  INTERNAL_ERROR,
  INVALID_REQUEST,
  METHOD_NOT_FOUND,
  MISSING_CLIENT_CAPABILITY,
  PARSE_ERROR,
  SERVER_ERROR,
  SESSION_NOT_FOUND,
  classifyMessage,
  echoableId,
  isPlainObject,
  serializeError,
  type JsonRpcNotification,
  type JsonRpcRequest,
} from './jsonrpc.js';
import {
  LegacySessionStore,
  type LegacySession,
  type SessionStoreOptions,
} from './legacy-sessions.js';
import {
  ALL_KINDS,
  LIST_CHANGED_METHOD,
  ListChangedFanout,
  type FanoutOptions,
} from './list-changed.js';
import { createRequestGuard, type OriginPolicy } from './origin.js';
import {
  BATCH_VERSIONS,
  DEFAULT_MAX_BODY_BYTES,
  LEGACY_PROTOCOL_VERSIONS,
  PROTOCOL_VERSION_META_KEY,
} from './protocol.js';
import { SseStream, writeSingleEventResponse } from './sse.js';
import { ListenStreams, checkParamHeaders, routePost, sendJson } from './stateless.js';
import { serializeNotification } from './jsonrpc.js';
import type { EntryKind } from '../registry/types.js';

export { DEFAULT_MAX_BODY_BYTES };

/** The first revision whose clients understand priming events and resumption (SEP-1699). */
const RESUMABLE_VERSION = '2025-11-25';

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
}

export interface HttpServerOptions extends HttpHandlerOptions {
  /** Interface to bind (default 127.0.0.1). */
  host?: string;
  /** Answers requests outside the MCP endpoint (admin API, metadata); true when it answered. */
  otherRoutes?: (req: IncomingMessage, res: ServerResponse) => boolean;
  /** Port (default 0: any free port). */
  port?: number;
}

export interface McpHttpHandler {
  /** Handles one request on the MCP endpoint; answers 404 for other paths. */
  handle(req: IncomingMessage, res: ServerResponse): void;
  readonly dispatcher: McpDispatcher;
  readonly sessions: LegacySessionStore;
  readonly fanout: ListChangedFanout;
  /** Ends every stream and session; the listen streams get their graceful-close result. */
  close(): void;
}

export interface HttpServerHandle {
  url: string;
  port: number;
  server: Server;
  handler: McpHttpHandler;
  close(): Promise<void>;
}

/**
 * One POST request's channel. Its abort source is made lazily: the AbortController and the
 * response's 'close' listener exist only once a handler reads `ctx.signal` (or a cancellation
 * arrives first); the response closing before it finished means the caller went away. A message
 * sent while the call runs turns the response into an event stream, when the client accepts one.
 */
class ResponseAbort extends RequestChannel {
  /** The response became an event stream: the answer goes out as its last event. */
  streaming = false;
  /** 2025-11-25 sessions: the stream's events are kept so the client can resume it. */
  private resumable: ResumableStream | undefined;

  constructor(
    private readonly res: ServerResponse,
    private readonly req: IncomingMessage,
    private readonly session: LegacySession | undefined,
    /** Batch members share one response and cannot stream. */
    private readonly canStream = true,
  ) {
    super();
  }

  protected override created(ctl: AbortController): void {
    const res = this.res;
    if (res.closed) {
      if (!res.writableFinished) ctl.abort(new Error('client disconnected'));
      return;
    }
    res.once('close', () => {
      // A resumable stream outlives its connection: the client may come back for the answer.
      if (!res.writableFinished && this.resumable === undefined)
        ctl.abort(new Error('client disconnected'));
    });
  }

  private upgrade(): boolean {
    const res = this.res;
    if (!this.canStream || res.writableEnded || res.destroyed) return false;
    if (!(this.req.headers.accept ?? '').includes('text/event-stream')) return false;
    const session = this.session;
    res.writeHead(200, {
      'Content-Type': 'text/event-stream',
      'Cache-Control': 'no-cache, no-transform',
      'X-Accel-Buffering': 'no',
      ...(session === undefined ? {} : { 'Mcp-Session-Id': session.id }),
    });
    this.streaming = true;
    // Priming events (empty data) confuse clients of older revisions, so only 2025-11-25 on.
    if (session !== undefined && session.protocolVersion >= RESUMABLE_VERSION) {
      const stream = (session.resumable ??= new ResumableStreams()).open(res);
      this.resumable = stream;
      stream.prime(DEFAULT_RETRY_MS);
      res.once('close', () => stream.dropped());
    }
    return true;
  }

  override send(json: string): boolean {
    if (!this.streaming) {
      if (!this.upgrade()) return false;
    } else if (this.resumable === undefined && (this.res.writableEnded || this.res.destroyed)) {
      return false;
    }
    if (this.resumable !== undefined) this.resumable.send(json);
    else this.res.write('event: message\ndata: ' + json + '\n\n');
    return true;
  }

  override pollLater(retryMs: number): boolean {
    if (!this.streaming && !this.upgrade()) return false;
    if (this.resumable === undefined) return false;
    this.resumable.detach(retryMs);
    return true;
  }

  /** Ends the stream with the answer (or keeps it for the client to resume). */
  finish(json: string): void {
    if (this.resumable !== undefined) this.resumable.finish(json);
    else this.res.end('event: message\ndata: ' + json + '\n\n');
  }
}

interface BodyState {
  res: ServerResponse;
  chunks: Buffer[];
  size: number;
  over: boolean;
}
const BODY = Symbol('moonhub.body');
type BodyRequest = IncomingMessage & { [BODY]?: BodyState };
const PRINCIPAL = Symbol('moonhub.principal');
type AuthedRequest = IncomingMessage & { [PRINCIPAL]?: string };

function principalOf(req: IncomingMessage): string | undefined {
  return (req as AuthedRequest)[PRINCIPAL];
}

function headerOf(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/** JSON unless the client accepts only an event stream. */
function wantsSse(req: IncomingMessage): boolean {
  const accept = req.headers.accept;
  return (
    accept !== undefined &&
    !accept.includes('application/json') &&
    !accept.includes('*/*') &&
    accept.includes('text/event-stream')
  );
}

function isJsonContentType(ct: string | undefined): boolean {
  if (ct === undefined) return false;
  const semi = ct.indexOf(';');
  return (semi === -1 ? ct : ct.slice(0, semi)).trim().toLowerCase() === 'application/json';
}

const LEGACY_NOTES: Record<EntryKind, string> = {
  tools: serializeNotification(LIST_CHANGED_METHOD.tools),
  prompts: serializeNotification(LIST_CHANGED_METHOD.prompts),
  resources: serializeNotification(LIST_CHANGED_METHOD.resources),
};

export function createMcpHttpHandler(
  registry: Registry,
  opts: HttpHandlerOptions = {},
): McpHttpHandler {
  const dispatcher = opts.dispatcher ?? createMcpDispatcher(registry, opts);
  const path = opts.path ?? '/mcp';
  const maxBody = opts.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  // Past this much we stop reading a too-large body and drop the connection.
  const drainCap = Math.max(maxBody * 4, 32 * 1024 * 1024);
  const guard = createRequestGuard(opts);
  const sessions = new LegacySessionStore(opts);
  const fanout = new ListChangedFanout(registry, opts);
  const listens = new ListenStreams(fanout, dispatcher.serverInfo, undefined, (l) =>
    registry.onResourceUpdated(l),
  );
  // A subscribed resource changed: tell each 2025 session that subscribed, on its GET stream.
  const removeUpdateListener = registry.onResourceUpdated((uri) => {
    let note: string | undefined;
    for (const session of sessions.values()) {
      if (session.subscriptions?.has(uri) && session.stream !== undefined) {
        note ??= serializeNotification('notifications/resources/updated', { uri });
        session.stream.send(note);
      }
    }
  });
  const scopes = new WeakMap<LegacySession, RequestScope>();
  const authenticate = opts.authenticate;

  function legacyScope(session: LegacySession): RequestScope {
    let scope = scopes.get(session);
    if (scope === undefined) {
      scope = {
        era: 'legacy',
        protocolVersion: session.protocolVersion,
        session,
        principal: session.principal,
      };
      scopes.set(session, scope);
    }
    scope.protocolVersion = session.protocolVersion;
    return scope;
  }

  function fail(
    res: ServerResponse,
    status: number,
    code: number,
    message: string,
    id: unknown = null,
    data?: unknown,
  ): void {
    sendJson(res, status, serializeError(echoableId({ id }) ?? null, code, message, data));
  }

  function handle(req: IncomingMessage, res: ServerResponse): void {
    try {
      const url = req.url ?? '/';
      if (
        url !== path &&
        !(
          url.startsWith(path) &&
          (url[path.length] === '?' || (url[path.length] === '/' && url.length === path.length + 1))
        )
      ) {
        fail(res, 404, SERVER_ERROR, 'Not Found');
        req.resume();
        return;
      }
      const verdict = guard(req.headers);
      if (verdict !== undefined) {
        fail(res, verdict.status, SERVER_ERROR, verdict.message);
        req.resume();
        return;
      }
      if (authenticate !== undefined && !(PRINCIPAL in req)) {
        const auth = authenticate(req);
        if (auth instanceof Promise)
          auth.then(
            (v) => authenticated(req, res, v),
            (err: unknown) => internalFailure(res, err),
          );
        else authenticated(req, res, auth);
        return;
      }
      switch (req.method) {
        case 'POST':
          readBody(req, res);
          return;
        case 'GET':
          handleGet(req, res);
          return;
        case 'DELETE':
          handleDelete(req, res);
          return;
        default:
          res.writeHead(405, { Allow: 'GET, POST, DELETE', 'Content-Type': 'application/json' });
          res.end(serializeError(null, SERVER_ERROR, 'Method Not Allowed'));
          req.resume();
      }
    } catch (err) {
      internalFailure(res, err);
    }
  }

  /** Goes on with an authenticated request (handle() again, now with its principal set). */
  function authenticated(req: IncomingMessage, res: ServerResponse, verdict: AuthVerdict): void {
    if (!verdict.ok) {
      const length = String(Buffer.byteLength(verdict.body));
      res.writeHead(verdict.status, {
        'Content-Type': 'application/json',
        'Content-Length': length,
        ...verdict.headers,
      });
      res.end(verdict.body);
      req.resume();
      return;
    }
    (req as AuthedRequest)[PRINCIPAL] = verdict.principal;
    handle(req, res);
  }

  function internalFailure(res: ServerResponse, err: unknown): void {
    opts.onError?.(err);
    if (!res.headersSent) fail(res, 500, INTERNAL_ERROR, 'Internal error');
    else res.destroy();
  }

  // ---- POST --------------------------------------------------------------------------------

  function readBody(req: IncomingMessage, res: ServerResponse): void {
    if (!isJsonContentType(req.headers['content-type'])) {
      fail(res, 415, SERVER_ERROR, 'Unsupported Media Type: Content-Type must be application/json');
      req.resume();
      return;
    }
    const declared = Number(req.headers['content-length']);
    if (declared > drainCap) {
      tooLarge(res, true);
      req.resume();
      return;
    }
    // State lives on the request and the listeners are shared: no closures per request.
    (req as BodyRequest)[BODY] = { res, chunks: [], size: 0, over: declared > maxBody };
    req.on('data', onBodyData);
    req.on('end', onBodyEnd);
    req.on('error', onBodyError);
  }

  function onBodyData(this: BodyRequest, chunk: Buffer): void {
    const st = this[BODY]!;
    st.size += chunk.length;
    if (st.over || st.size > maxBody) {
      // Keep reading (and dropping) so the client gets to read our 413 instead of a reset.
      st.over = true;
      st.chunks.length = 0;
      if (st.size > drainCap) {
        tooLarge(st.res, true);
        this.destroy();
      }
      return;
    }
    st.chunks.push(chunk);
  }

  function onBodyEnd(this: BodyRequest): void {
    const st = this[BODY]!;
    this[BODY] = undefined;
    const res = st.res;
    if (st.over) {
      tooLarge(res, false);
      return;
    }
    const buf = st.chunks.length === 1 ? st.chunks[0]! : Buffer.concat(st.chunks, st.size);
    let body: unknown;
    try {
      body = JSON.parse(buf.toString('utf8'));
    } catch {
      fail(res, 400, PARSE_ERROR, 'Parse error: Invalid JSON');
      return;
    }
    handlePost(this, res, body).catch((err: unknown) => internalFailure(res, err));
  }

  function onBodyError(this: BodyRequest): void {
    const st = this[BODY];
    if (st !== undefined && !st.res.headersSent) st.res.destroy();
  }

  function tooLarge(res: ServerResponse, closeNow: boolean): void {
    if (res.headersSent) return;
    res.writeHead(413, { 'Content-Type': 'application/json', Connection: 'close' });
    res.end(
      serializeError(
        null,
        SERVER_ERROR,
        `Payload Too Large: the request body exceeds ${maxBody} bytes`,
      ),
    );
    if (closeNow) res.once('finish', () => res.socket?.destroySoon());
  }

  async function handlePost(
    req: IncomingMessage,
    res: ServerResponse,
    body: unknown,
  ): Promise<void> {
    if (Array.isArray(body)) return handleBatch(req, res, body);
    const kind = classifyMessage(body);
    if (kind === 'invalid') {
      fail(
        res,
        400,
        INVALID_REQUEST,
        'Invalid Request: not a JSON-RPC 2.0 request, notification or response',
        echoableId(body),
      );
      return;
    }
    if (kind === 'response') {
      // A client's answer to a server request (sampling, elicitation) of its session.
      const session = legacySession(req, res);
      if (session !== undefined) {
        dispatcher.handleResponse(body as Record<string, unknown>, session);
        accepted(res);
      }
      return;
    }
    const msg = body as JsonRpcRequest;
    const route = routePost(msg, kind === 'request', req.headers);
    if (route.kind === 'reject') {
      fail(
        res,
        route.status,
        route.code,
        route.message,
        kind === 'request' ? msg.id : null,
        route.data,
      );
      return;
    }
    if (route.kind === 'modern') {
      if (kind === 'notification') {
        // Stateless: a cancellation is carried by closing the request's connection, which
        // aborts its signal; a notifications/cancelled POST has no session to look in.
        accepted(res);
        return;
      }
      if (msg.method === 'subscriptions/listen') {
        listens.serve(res, msg.id, msg.params, principalOf(req));
        return;
      }
      if (msg.method === 'tools/call' && typeof msg.params?.name === 'string') {
        const schema = registry.getTool(msg.params.name)?.inputSchema;
        const bad =
          schema === undefined
            ? undefined
            : checkParamHeaders(schema, msg.params.arguments, req.headers);
        if (bad !== undefined && bad.kind === 'reject') {
          fail(res, bad.status, bad.code, bad.message, msg.id, bad.data);
          return;
        }
      }
      const scope: RequestScope = {
        era: 'modern',
        protocolVersion: route.version,
        session: undefined,
        clientCapabilities: route.clientCapabilities,
        principal: principalOf(req),
      };
      return answer(req, res, msg, scope, undefined);
    }
    // 2025 era.
    if (kind === 'request' && msg.method === 'initialize') {
      const session = sessions.create();
      if (session === undefined) {
        fail(res, 503, SERVER_ERROR, 'Service Unavailable: too many sessions', msg.id);
        return;
      }
      session.principal = principalOf(req);
      const out = await dispatcher.handleRequest(msg, legacyScope(session));
      legacyScope(session);
      respond(req, res, out, { 'Mcp-Session-Id': session.id });
      return;
    }
    const session = legacySession(req, res);
    if (session === undefined) return;
    if (kind === 'notification') {
      dispatcher.handleNotification(msg as JsonRpcNotification, legacyScope(session));
      accepted(res);
      return;
    }
    return answer(req, res, msg, legacyScope(session), session.id);
  }

  async function answer(
    req: IncomingMessage,
    res: ServerResponse,
    msg: JsonRpcRequest,
    scope: RequestScope,
    sessionId: string | undefined,
  ): Promise<void> {
    const channel = new ResponseAbort(res, req, scope.session as LegacySession | undefined);
    const out = await dispatcher.handleRequest(msg, scope, channel);
    if (channel.streaming) {
      channel.finish(out);
      return;
    }
    if (res.destroyed) return;
    if (scope.era === 'modern' && channel.errorCode !== undefined) {
      // 2026-07-28 over HTTP: an unknown method is 404, a missing client capability 400.
      const status =
        channel.errorCode === METHOD_NOT_FOUND
          ? 404
          : channel.errorCode === MISSING_CLIENT_CAPABILITY
            ? 400
            : 200;
      if (status !== 200) {
        sendJson(res, status, out);
        return;
      }
    }
    respond(req, res, out, sessionId === undefined ? undefined : { 'Mcp-Session-Id': sessionId });
  }

  function respond(
    req: IncomingMessage,
    res: ServerResponse,
    out: string,
    headers?: Record<string, string>,
  ): void {
    if (wantsSse(req)) writeSingleEventResponse(res, out, headers);
    else sendJson(res, 200, out, headers);
  }

  function accepted(res: ServerResponse): void {
    res.writeHead(202);
    res.end();
  }

  /** The request's 2025 session, or undefined after answering 400/404 for a missing/unknown one. */
  function legacySession(req: IncomingMessage, res: ServerResponse): LegacySession | undefined {
    const sid = headerOf(req, 'mcp-session-id');
    if (sid === undefined || sid === '') {
      fail(res, 400, SERVER_ERROR, 'Bad Request: Mcp-Session-Id header is required');
      return undefined;
    }
    const session = sessions.touch(sid);
    // A session used by another principal than its creator's is, to that caller, not there.
    if (session === undefined || session.principal !== principalOf(req)) {
      fail(res, 404, SESSION_NOT_FOUND, 'Session not found');
      return undefined;
    }
    const pv = headerOf(req, 'mcp-protocol-version');
    if (pv !== undefined && !LEGACY_PROTOCOL_VERSIONS.includes(pv.trim())) {
      fail(
        res,
        400,
        SERVER_ERROR,
        `Bad Request: Unsupported protocol version: ${pv} (supported versions: ${LEGACY_PROTOCOL_VERSIONS.join(', ')})`,
      );
      return undefined;
    }
    return session;
  }

  async function handleBatch(
    req: IncomingMessage,
    res: ServerResponse,
    batch: unknown[],
  ): Promise<void> {
    if (batch.length === 0) {
      fail(res, 400, INVALID_REQUEST, 'Invalid Request: empty JSON-RPC batch');
      return;
    }
    for (const el of batch) {
      const params = isPlainObject(el) ? el.params : undefined;
      if (
        isPlainObject(params) &&
        isPlainObject(params._meta) &&
        PROTOCOL_VERSION_META_KEY in params._meta
      ) {
        fail(
          res,
          400,
          INVALID_REQUEST,
          'Invalid Request: JSON-RPC batches may not carry 2026-07-28 requests',
        );
        return;
      }
      if (isPlainObject(el) && el.method === 'initialize') {
        fail(res, 400, INVALID_REQUEST, 'Invalid Request: initialize may not be part of a batch');
        return;
      }
    }
    const session = legacySession(req, res);
    if (session === undefined) return;
    if (!BATCH_VERSIONS.has(session.protocolVersion)) {
      fail(
        res,
        400,
        INVALID_REQUEST,
        `Invalid Request: JSON-RPC batches are not supported on protocol revision ${session.protocolVersion}`,
      );
      return;
    }
    const scope = legacyScope(session);
    const pending: Promise<string>[] = [];
    for (const el of batch) {
      const kind = classifyMessage(el);
      if (kind === 'request')
        pending.push(
          dispatcher.handleRequest(
            el as JsonRpcRequest,
            scope,
            new ResponseAbort(res, req, session, false),
          ),
        );
      else if (kind === 'notification')
        dispatcher.handleNotification(el as JsonRpcNotification, scope);
      else if (kind === 'invalid')
        pending.push(
          Promise.resolve(serializeError(echoableId(el), INVALID_REQUEST, 'Invalid Request')),
        );
    }
    if (pending.length === 0) {
      accepted(res);
      return;
    }
    const outs = await Promise.all(pending);
    if (!res.destroyed)
      respond(req, res, '[' + outs.join(',') + ']', { 'Mcp-Session-Id': session.id });
  }

  // ---- GET / DELETE --------------------------------------------------------------------------

  function handleGet(req: IncomingMessage, res: ServerResponse): void {
    const sid = headerOf(req, 'mcp-session-id');
    if (sid === undefined || sid === '') {
      // No session: 2026-07-28 clients use subscriptions/listen instead of a standalone stream.
      res.writeHead(405, { Allow: 'POST', 'Content-Type': 'application/json' });
      res.end(
        serializeError(
          null,
          SERVER_ERROR,
          'Method Not Allowed: no session stream without Mcp-Session-Id',
        ),
      );
      return;
    }
    if (!(req.headers.accept ?? '').includes('text/event-stream')) {
      fail(res, 406, SERVER_ERROR, 'Not Acceptable: Client must accept text/event-stream');
      return;
    }
    const session = legacySession(req, res);
    if (session === undefined) return;
    const lastEventId = headerOf(req, 'last-event-id');
    if (lastEventId !== undefined) {
      const found = session.resumable?.find(lastEventId);
      if (found === undefined) {
        fail(res, 404, SERVER_ERROR, `Not Found: no stream to resume at event ${lastEventId}`);
        return;
      }
      found.stream.resume(res, found.seq, { 'Mcp-Session-Id': session.id });
      return;
    }
    if (session.stream !== undefined && !session.stream.closed) {
      fail(res, 409, SERVER_ERROR, 'Conflict: Only one SSE stream is allowed per session');
      return;
    }
    let removeSink: (() => void) | undefined = undefined;
    const stream = new SseStream(res, { 'Mcp-Session-Id': session.id }, () => {
      removeSink?.();
      if (session.stream === stream) session.stream = undefined;
      session.lastSeen = Date.now();
    });
    session.stream = stream;
    removeSink = fanout.add({
      kinds: ALL_KINDS,
      principal: session.principal,
      sessionId: session.id,
      deliver: (kind) => stream.send(LEGACY_NOTES[kind]),
    });
  }

  function handleDelete(req: IncomingMessage, res: ServerResponse): void {
    const session = legacySession(req, res);
    if (session === undefined) return;
    sessions.delete(session.id);
    res.writeHead(200);
    res.end();
  }

  function close(): void {
    removeUpdateListener();
    listens.closeAll();
    sessions.closeAll();
    fanout.close();
  }

  return { handle, dispatcher, sessions, fanout, close };
}

/** Starts an HTTP server with the MCP endpoint; binds 127.0.0.1 unless told otherwise. */
export function startHttpServer(
  registry: Registry,
  opts: HttpServerOptions = {},
): Promise<HttpServerHandle> {
  const handler = createMcpHttpHandler(registry, opts);
  const other = opts.otherRoutes;
  const server = createServer(
    other === undefined
      ? handler.handle
      : (req, res) => {
          if (!other(req, res)) handler.handle(req, res);
        },
  );
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
        close: () =>
          new Promise<void>((done) => {
            handler.close();
            server.close(() => done());
            server.closeAllConnections();
          }),
      });
    });
  });
}
