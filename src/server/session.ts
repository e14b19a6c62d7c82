/**
 * Sessions and scopes: what a 2025-era session remembers between requests, how one request
 * arrived (its era, session or envelope, principal and transport), and the session layer's
 * interface. The layer is an interface so limits (sessions per principal, idle eviction,
 * subscription caps, stream back-pressure, drain) and other stores (Redis for several hub
 * instances) can sit behind it; `legacy-sessions.ts` is today's in-process implementation.
 */
import type { IncomingHttpHeaders, ServerResponse } from 'node:http';
import type { WireError } from '../errors.js';
import { IdTable } from '../id-table.js';
import type { JsonRpcId } from './jsonrpc.js';
import type { ResumableStreams, StreamMirror } from './resumable.js';
import type { SseStream } from './sse.js';
import type { Abortable } from './abort.js';
import { LATEST_LEGACY_VERSION } from './protocol.js';
import { IndexedSubscriptions, type SubscriberIndex } from './subscriber-index.js';
import type { SubscriptionBudget } from './subscription-budget.js';

/** A 2025-era request the server sent the client and the client has not answered yet. */
export interface OutgoingRequest {
  resolve(result: Record<string, unknown>): void;
  reject(err: Error): void;
}

/** What a 2025-era session remembers between requests (HTTP session or the one stdio peer). */
export interface SessionState {
  /** The `Mcp-Session-Id`; undefined for stdio. */
  readonly id: string | undefined;
  protocolVersion: string;
  initialized: boolean;
  logLevel: string | undefined;
  clientInfo: unknown;
  clientCapabilities: Record<string, unknown> | undefined;
  /** Who the session acts for; feeds `DispatcherOptions.filterFor`. */
  principal: string | undefined;
  /**
   * Requests still running, so `notifications/cancelled` can abort them. Not a Map: entries
   * live a request each and hold it (id-table.ts).
   */
  readonly inflight: IdTable<Abortable, JsonRpcId>;
  /** Requests this server sent the client (sampling, elicitation), made at the first one. */
  outgoing?: Map<JsonRpcId, OutgoingRequest>;
  /**
   * Resource URIs the client subscribed to, made at the first subscription (`subscriptionsOf`):
   * indexed by its store when the session has one, so an update reaches only its subscribers.
   */
  subscriptions?: Set<string>;
  /** The store's index of subscribers; unset for stdio and once the session has ended. */
  subscribers?: SubscriberIndex<SessionState>;
  /**
   * Cluster modes: where server-to-client request ids come from and where a client's answer
   * goes when the request waits in another process (`cluster/answers.ts`). Absent: in-process.
   */
  peerRouter?: PeerRouter;
}

/** A client's answer to a server request, whichever process it landed on. */
export interface PeerRouter {
  open(
    session: string,
    signal?: AbortSignal,
  ): { id: string; answer: Promise<{ message: { result?: unknown; error?: unknown } }> };
  deliver(
    id: unknown,
    session: string,
    message: { result?: unknown; error?: unknown },
  ): 'settled' | 'forwarded' | 'unknown';
}

export function newSessionState(
  id: string | undefined,
  protocolVersion = LATEST_LEGACY_VERSION,
): SessionState {
  return {
    id,
    protocolVersion,
    initialized: false,
    logLevel: undefined,
    clientInfo: undefined,
    clientCapabilities: undefined,
    principal: undefined,
    inflight: new IdTable(),
  };
}

/** The session's subscribed URIs, made (and tied to its store's index) at the first use. */
export function subscriptionsOf(session: SessionState): Set<string> {
  return (session.subscriptions ??=
    session.subscribers === undefined
      ? new Set()
      : new IndexedSubscriptions(session.subscribers, session, session.principal));
}

/**
 * Replaces the session's subscriptions (a copy read from a shared record) and the index with
 * them; `undefined` drops them and unties the session from its index (an ended session).
 */
export function resetSubscriptions(
  session: SessionState,
  uris: Iterable<string> | undefined,
): void {
  session.subscriptions?.clear();
  session.subscriptions = undefined;
  if (uris === undefined) {
    session.subscribers = undefined;
    return;
  }
  const held = subscriptionsOf(session);
  for (const uri of uris) held.add(uri);
}

/** One 2025 HTTP session record: the state plus its streams. */
export interface SessionRecord extends SessionState {
  readonly id: string;
  lastSeen: number;
  /** The standalone GET stream, when the client opened one. */
  stream: SseStream | undefined;
  /** POST streams a client may resume with Last-Event-ID (2025-11-25), made at the first. */
  resumable?: ResumableStreams;
  /** Cluster modes: the streams' events are kept for resumption on another process too. */
  streamMirror?: StreamMirror;
}

/** The transports the inbound layer serves. */
export type TransportName = 'http' | 'stdio';

/** How one request arrived: its era, and the session (2025) or envelope (2026) it carries. */
export interface RequestScope {
  era: 'legacy' | 'modern';
  protocolVersion: string;
  session: SessionState | undefined;
  /** 2026-07-28: the capabilities the request's envelope declares. */
  clientCapabilities?: Record<string, unknown> | undefined;
  principal?: string | undefined;
  /** Which transport carried it (default http). */
  transport?: TransportName;
  /** 2026-07-28 over HTTP: the request's headers, for the tool parameter-header check. */
  headers?: IncomingHttpHeaders | undefined;
}

/**
 * The session layer: where 2025 sessions live and how server-to-client messages reach them.
 * Every method is synchronous today; an implementation over a shared store keeps local records
 * as a cache and publishes through `bus`.
 */
export interface SessionLayer {
  readonly size: number;
  /** How many sessions it holds at most (refusals past it are counted by observe/). */
  readonly maxSessions: number;
  /**
   * A new session for `principal`, or the refusal naming the limit (undefined: refused as
   * `too_many_sessions`). The in-process layer evicts the oldest idle session to make room.
   */
  create(principal: string | undefined): SessionRecord | WireError | undefined;
  /** Looks a session up and marks it active. */
  touch(id: string): SessionRecord | undefined;
  values(): IterableIterator<SessionRecord>;
  delete(id: string): boolean;
  /** Ends every session `pred` picks (say, those of a revoked principal); returns how many. */
  deleteWhere(pred: (s: SessionRecord) => boolean): number;
  /** The message bus: server-to-client messages addressed to sessions, not to streams. */
  readonly bus: SessionBus;
  closeAll(): void;
  /** Cluster modes only: sessions kept in a store every process shares. Absent: in-process. */
  readonly shared?: SharedSessions;
  /**
   * What the subscriptions of this process count, per principal and in all; the transport's
   * listen streams are charged to it too.
   */
  readonly subscriptionBudget?: SubscriptionBudget;
}

/**
 * The hooks the HTTP transport calls when 2025 sessions live in a store shared by processes
 * (`shared-sessions.ts`). Asynchronous, so they run around the synchronous inbound decision.
 */
export interface SharedSessions {
  /**
   * Before a request naming this session: the local copy made or refreshed from the store.
   * Rejects with a WireError (`session_store_unavailable`) when the store does not answer and
   * this process does not know the session.
   */
  load(id: string): Promise<void>;
  /** After a request: what it changed is written; the error when the session cannot be kept. */
  commit(session: SessionRecord): Promise<WireError | undefined>;
  /** DELETE: ends the session on every process; resolves once its record is gone. */
  end(id: string): Promise<boolean>;
  /** A GET stream opened here: messages for the session reach it from any process. */
  openStream(session: SessionRecord): () => void;
  /** A `Last-Event-ID` of a stream another process wrote: replayed from the shared log. */
  resume(
    res: ServerResponse,
    session: string,
    lastEventId: string,
    headers: Record<string, string>,
  ): Promise<WireError | undefined>;
}

/** Server-to-client messages for sessions (resource updates; later, cross-instance delivery). */
export interface SessionBus {
  /** Sends one serialised message on the session's standalone stream; false when it has none. */
  send(session: SessionRecord, json: string): boolean;
  /** Sends `json` to every session whose subscriptions hold `uri`. */
  resourceUpdated(uri: string, json: () => string): void;
}
