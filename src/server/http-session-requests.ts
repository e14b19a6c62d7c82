/**
 * The 2025 session requests that are not a POST: the GET that opens (or resumes) a session's
 * stream of server messages, and the DELETE that ends a session; in the cluster modes, the
 * session's shared record is loaded first.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { EntryKind } from '../registry/types.js';
import { wireError } from '../errors.js';
import { resumeNotFound } from './resumable.js';
import type { McpDispatcher } from './dispatcher.js';
import { headerOf, retryAfter, sendError } from './http-reply.js';
import { serializeNotification } from './jsonrpc.js';
import type { LegacySession } from './legacy-sessions.js';
import { ALL_KINDS, LIST_CHANGED_METHOD, type ListChangedFanout } from './list-changed.js';
import type { SessionLayer } from './session.js';
import { SseStream } from './sse.js';

/** What these requests need of the HTTP transport. */
export interface SessionRequests {
  readonly sessions: SessionLayer;
  readonly fanout: ListChangedFanout;
  readonly dispatcher: McpDispatcher;
  /** Who is asking (authenticated already), if anyone in particular. */
  principalOf(req: IncomingMessage): string | undefined;
  /** The request's session, or undefined once the refusal was sent. */
  sessionOf(req: IncomingMessage, res: ServerResponse): LegacySession | undefined;
  internalFailure(res: ServerResponse, err: unknown): void;
}

const LEGACY_NOTES: Record<EntryKind, string> = {
  tools: serializeNotification(LIST_CHANGED_METHOD.tools),
  prompts: serializeNotification(LIST_CHANGED_METHOD.prompts),
  resources: serializeNotification(LIST_CHANGED_METHOD.resources),
};

export function handleGet(t: SessionRequests, req: IncomingMessage, res: ServerResponse): void {
  const sid = headerOf(req, 'mcp-session-id');
  // No session: 2026-07-28 clients use subscriptions/listen instead of a standalone stream.
  if (sid === undefined || sid === '')
    return sendError(res, wireError('get_without_session'), null, { Allow: 'POST' });
  if (!(req.headers.accept ?? '').includes('text/event-stream'))
    return sendError(res, wireError('not_acceptable'));
  if (headerOf(req, 'last-event-id') !== undefined && resumeRefused(t, req, res)) return;
  const shared = t.sessions.shared;
  if (shared === undefined) return openGet(t, req, res);
  shared.load(sid).then(
    () => openGet(t, req, res),
    (err: unknown) => t.internalFailure(res, err),
  );
}

/**
 * A resumption replays what the stream kept (up to limits.streams.buffer_bytes) and may be
 * repeated at will, so each one takes a token of the principal's rate limit (limits.rate.principal)
 * like a POSTed request; refused with 429 and Retry-After. True when refused (answered).
 */
function resumeRefused(t: SessionRequests, req: IncomingMessage, res: ServerResponse): boolean {
  const refusal = t.dispatcher.flow.takeRate(t.principalOf(req), undefined);
  if (refusal === undefined) return false;
  const { limit, retryAfterMs } = refusal;
  const error = wireError('rate_limited', { limit, retryAfterMs }, { limit, retryAfterMs });
  sendError(res, error, null, retryAfter(error));
  return true;
}

function openGet(t: SessionRequests, req: IncomingMessage, res: ServerResponse): void {
  const session = t.sessionOf(req, res);
  if (session === undefined) return;
  const lastEventId = headerOf(req, 'last-event-id');
  if (lastEventId !== undefined) {
    const found = session.resumable?.find(lastEventId);
    if (found === undefined && t.sessions.shared !== undefined) {
      // Cluster modes: the stream may be another process's; its events are in the shared log.
      t.sessions.shared.resume(res, session.id, lastEventId, { 'Mcp-Session-Id': session.id }).then(
        (refused) => {
          if (refused !== undefined) sendError(res, refused);
        },
        (err: unknown) => t.internalFailure(res, err),
      );
      return;
    }
    if (found === undefined) return sendError(res, resumeNotFound(lastEventId));
    found.stream.resume(res, found.seq, { 'Mcp-Session-Id': session.id });
    return;
  }
  if (session.stream !== undefined && !session.stream.closed)
    return sendError(res, wireError('stream_conflict'));
  let removeSink: (() => void) | undefined = undefined;
  let leave: (() => void) | undefined = undefined;
  const stream = new SseStream(
    res,
    { 'Mcp-Session-Id': session.id },
    () => {
      removeSink?.();
      leave?.();
      // Not client activity: the idle clock runs from the client's last message.
      if (session.stream === stream) session.stream = undefined;
    },
    t.dispatcher.flow,
  );
  session.stream = stream;
  removeSink = t.fanout.add({
    kinds: ALL_KINDS,
    principal: session.principal,
    sessionId: session.id,
    deliver: (kind) => stream.note(kind, LEGACY_NOTES[kind]),
  });
  leave = t.sessions.shared?.openStream(session);
}

export function handleDelete(t: SessionRequests, req: IncomingMessage, res: ServerResponse): void {
  const shared = t.sessions.shared;
  const sid = headerOf(req, 'mcp-session-id');
  if (shared === undefined || sid === undefined || sid === '') return deleteSession(t, req, res);
  shared.load(sid).then(
    () => deleteSession(t, req, res),
    (err: unknown) => t.internalFailure(res, err),
  );
}

function deleteSession(t: SessionRequests, req: IncomingMessage, res: ServerResponse): void {
  const session = t.sessionOf(req, res);
  if (session === undefined) return;
  const shared = t.sessions.shared;
  if (shared !== undefined) {
    // Cluster modes: the record is gone and every process told before the client hears 200.
    shared.end(session.id).then(
      () => {
        res.writeHead(200);
        res.end();
      },
      (err: unknown) => t.internalFailure(res, err),
    );
    return;
  }
  t.sessions.delete(session.id);
  res.writeHead(200);
  res.end();
}
