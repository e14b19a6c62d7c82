/**
 * The shared record of a 2025 protocol session (`Mcp-Session-Id`), so that any instance can
 * serve a session another opened: its protocol version, principal, log level, client
 * capabilities and resource subscriptions, when it was last seen, and which instance holds its
 * standalone GET stream. Beside it, the SSE event log that lets a client resume a stream with
 * `Last-Event-ID` on another instance than the one that wrote it.
 *
 * Two implementations: `embedded-records.ts` (SQLite in the data folder, shared by the workers
 * of one machine) and `redis-records.ts` (Redis, with TTLs). Every quantity a client controls is
 * bounded here, whatever the carrier.
 */

export interface ProtocolSessionRecord {
  id: string;
  protocolVersion: string;
  /** Who opened it (`session:<uuid>`, `oauth:<sub>`); another principal gets 404. */
  principal?: string;
  logLevel?: string;
  clientCapabilities?: Record<string, unknown>;
  /** Resource URIs the client subscribed to. */
  subscriptions: string[];
  /** Epoch ms. */
  createdAt: number;
  lastSeen: number;
  /** The instance holding the session's standalone GET stream, while one is open. */
  streamOwner?: string;
}

/** The fields a request may change after `initialize`; null clears one. */
export interface SessionPatch {
  protocolVersion?: string;
  principal?: string;
  logLevel?: string | null;
  clientCapabilities?: Record<string, unknown>;
  streamOwner?: string | null;
}

export interface StoredEvent {
  seq: number;
  data: string;
}

export interface EventReplay {
  events: StoredEvent[];
  /** False when events after the asked one were dropped (bounds): the replay has a gap. */
  complete: boolean;
  /** The earliest kept event's data (even one the client had): who wrote the stream. */
  head?: string;
}

export interface RecordLimits {
  /** Sessions at once; `create` refuses more (default 10,000, as one process). */
  maxSessions: number;
  /** A session not seen for this long is forgotten (default 30 min, as one process). */
  idleTimeoutMs: number;
  /** Subscriptions per session (default 1,000). */
  maxSubscriptions: number;
  /** Events kept per stream for a replay, the latest ones (default 1,000, as one process). */
  maxEventsPerStream: number;
  /** An event larger than this is sent but not kept (default 1 MiB): the replay has a gap. */
  maxEventBytes: number;
  /** A stream's events are forgotten this long after its last event (default 10 min). */
  eventTtlMs: number;
  /**
   * Bytes of the event log, every stream together, each event counting `EVENT_OVERHEAD` and each
   * stream `STREAM_OVERHEAD` more (default 256 MiB): past it the streams written least recently
   * are forgotten whole. A resumption of one gets 404, as for an expired one.
   */
  eventLogBytes: number;
  /** The same for the streams of one principal's sessions (default 64 MiB). */
  eventLogBytesPerPrincipal: number;
  /**
   * An instance not refreshed for this long is dead (default 5 s, refreshed every fifth of it):
   * a stream resumed elsewhere then ends with `instance_lost` for the call it ran.
   */
  instanceTtlMs: number;
  /**
   * How long a process serves a 2025 session from its copy without re-reading the record
   * (default 5 s). Changes are announced on the bus and drop copies at once; this bounds what
   * a missed message can cost.
   */
  sessionCacheMs: number;
}

export const DEFAULT_RECORD_LIMITS: Readonly<RecordLimits> = {
  maxSessions: 10_000,
  idleTimeoutMs: 30 * 60_000,
  maxSubscriptions: 1000,
  maxEventsPerStream: 1000,
  maxEventBytes: 1024 * 1024,
  eventTtlMs: 10 * 60_000,
  eventLogBytes: 256 * 1024 * 1024,
  eventLogBytesPerPrincipal: 64 * 1024 * 1024,
  instanceTtlMs: 5000,
  sessionCacheMs: 5000,
};

/**
 * The session-side caps a new session is admitted under, cluster-wide (`limits.sessions.*`,
 * which a single process holds in its own index): one principal's sessions, and how long a
 * session must have been silent before it may be ended to make room.
 */
export interface AdmitCaps {
  /** Sessions of one principal across every process (default: unbounded but by `maxSessions`). */
  perPrincipal?: number;
  /** A session silent this long may be ended for a newcomer; unset: nothing is evicted. */
  evictIdleMs?: number;
}

/** What `admit` did: stored (having ended the `evicted` ones), or which bound refused it. */
export type Admission =
  { ok: true; evicted: string[] } | { ok: false; limit: 'sessions' | 'sessions_per_principal' };

export interface SessionRecordStore {
  readonly limits: Readonly<RecordLimits>;
  /** Stores a new session; false when `maxSessions` are open (after forgetting idle ones). */
  create(rec: ProtocolSessionRecord): Promise<boolean>;
  /**
   * Stores a new session under the caps, atomically across processes: a principal at its cap
   * gives up its own oldest idle session, a full store the oldest idle one of anybody; refused
   * when none is idle. The caller ends the evicted sessions' live copies (the bus).
   */
  admit(rec: ProtocolSessionRecord, caps: AdmitCaps): Promise<Admission>;
  get(id: string): Promise<ProtocolSessionRecord | undefined>;
  /** Changes some fields (null clears one); false when the session is gone. */
  update(id: string, patch: SessionPatch): Promise<boolean>;
  /** Marks the session active now; false when it is gone. */
  touch(id: string): Promise<boolean>;
  /** Adds a subscription; 'full' at `maxSubscriptions`, 'gone' when the session is. */
  subscribe(id: string, uri: string): Promise<'ok' | 'full' | 'gone'>;
  unsubscribe(id: string, uri: string): Promise<boolean>;
  delete(id: string): Promise<boolean>;
  /** Ids of the sessions a principal opened (to end them when it is revoked). */
  sessionsOf(principal: string): Promise<string[]>;
  /**
   * Keeps one event of a stream (ids `<stream>_<seq>`, seq rising from 0), counted against the
   * log's bounds and its `principal`'s. A later event of a stream the log no longer holds is
   * not kept: its start is gone.
   */
  appendEvent(stream: string, seq: number, data: string, principal?: string): Promise<void>;
  /** The kept events after `afterSeq`; undefined for a stream nothing is known of. */
  eventsAfter(stream: string, afterSeq: number): Promise<EventReplay | undefined>;
  /** Forgets a stream whose answer was delivered. */
  dropStream(stream: string): Promise<void>;
  /** This instance is running for `ttlMs` more (refreshed on a timer; a killed one stops). */
  markAlive(instance: string, ttlMs: number): Promise<void>;
  /** Whether an instance refreshed its liveness within its TTL. */
  isAlive(instance: string): Promise<boolean>;
  close(): Promise<void>;
}

/** What one kept event counts beyond its bytes, and one stream beyond its events. */
export const EVENT_OVERHEAD = 64;
export const STREAM_OVERHEAD = 1024;

export function recordLimits(over: Partial<RecordLimits> = {}): RecordLimits {
  const out = { ...DEFAULT_RECORD_LIMITS, ...over };
  for (const [k, v] of Object.entries(out))
    if (!Number.isInteger(v) || v <= 0) throw new Error(`${k} must be a positive integer`);
  return out;
}

/** A stream id is the hub's own random token; a Last-Event-ID from a client is checked first. */
export const STREAM_ID = /^[A-Za-z0-9_-]{1,64}$/;

export function checkStream(stream: string): void {
  if (!STREAM_ID.test(stream)) throw new Error(`bad stream id: ${JSON.stringify(stream)}`);
}
