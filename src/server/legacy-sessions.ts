/**
 * The in-process session layer: 2025-era HTTP sessions made at `initialize` with a crypto-random
 * id, lookup, deletion, the standalone GET stream each may hold, expiry after an idle timeout,
 * and the message bus that writes to those streams. Its bounds (sessions per principal and in
 * total, oldest-idle eviction, idle expiry) are the session index's (`session-limits.ts`).
 */
import { randomBytes } from 'node:crypto';
import { localError, type WireError } from '../errors.js';
import {
  newSessionState,
  resetSubscriptions,
  type SessionBus,
  type SessionLayer,
  type SessionRecord,
} from './session.js';
import {
  resolveLimits,
  SessionIndex,
  type LimitOptions,
  type RefusalCounter,
  type ServerLimits,
} from './session-limits.js';
import { SubscriberIndex } from './subscriber-index.js';
import { SubscriptionBudget } from './subscription-budget.js';

/** A 2025 HTTP session (the in-process session layer's record). */
export type LegacySession = SessionRecord;

export interface SessionStoreOptions extends LimitOptions {
  /** Idle time after which a session ends (`limits.sessions.idle_timeout_ms` wins; 30 min). */
  idleTimeoutMs?: number;
  /** Sessions in total (`limits.sessions.total` wins; default 10,000). */
  maxSessions?: number;
}

export class LegacySessionStore implements SessionLayer {
  private readonly index: SessionIndex<LegacySession>;
  readonly limits: ServerLimits;
  private readonly refused: RefusalCounter | undefined;
  private readonly sweeper: NodeJS.Timeout;
  /** What the subscriptions of this process's sessions and listen streams count. */
  readonly subscriptionBudget: SubscriptionBudget;
  /** Resource URI → the sessions subscribed to it (the bus's fan-out). */
  private readonly subscribers: SubscriberIndex<LegacySession>;

  constructor(opts: SessionStoreOptions = {}) {
    this.limits = resolveLimits({
      sessionIdleMs: opts.idleTimeoutMs,
      sessionsTotal: opts.maxSessions,
      ...opts.limits,
    });
    this.refused = opts.refused;
    this.subscriptionBudget = new SubscriptionBudget(
      this.limits.subscriptionBytesPerPrincipal,
      this.limits.subscriptionBytesTotal,
    );
    this.subscribers = new SubscriberIndex(this.subscriptionBudget);
    this.index = new SessionIndex(this.limits);
    const idle = this.limits.sessionIdleMs;
    const every = Math.max(50, Math.min(60_000, Math.floor(idle / 2)));
    this.sweeper = setInterval(() => this.sweep(Date.now()), every);
    this.sweeper.unref();
  }

  get size(): number {
    return this.index.size;
  }

  get maxSessions(): number {
    return this.limits.sessionsTotal;
  }

  get idleTimeoutMs(): number {
    return this.limits.sessionIdleMs;
  }

  readonly bus: SessionBus = {
    send: (session, json) => {
      if (session.stream === undefined) return false;
      session.stream.send(json);
      return true;
    },
    resourceUpdated: (uri, json) => {
      const subscribers = this.subscribers.of(uri);
      if (subscribers === undefined) return;
      let note: string | undefined;
      for (const session of subscribers)
        if (session.stream !== undefined) session.stream.send((note ??= json()));
    },
  };

  /**
   * A new session for `principal`, after making room: at its cap the principal's own oldest idle
   * session ends, in a full store the oldest idle one of anybody; the refusal when all are active.
   */
  create(principal?: string): LegacySession | WireError {
    const now = Date.now();
    const room = this.index.admit(principal, now);
    if ('error' in room) {
      this.refused?.(room.limit);
      return room.error;
    }
    if (room.evict !== undefined) this.end(room.evict);
    const id = randomBytes(16).toString('hex');
    const session = newSessionState(id) as LegacySession;
    session.lastSeen = now;
    session.stream = undefined;
    session.principal = principal;
    session.subscribers = this.subscribers;
    this.index.add(session);
    return session;
  }

  values(): IterableIterator<LegacySession> {
    return this.index.values();
  }

  /** Looks a session up without marking it active (not a message from its client). */
  peek(id: string): LegacySession | undefined {
    return this.index.get(id);
  }

  /** Looks a session up and marks it active (a message from its client). */
  touch(id: string): LegacySession | undefined {
    const s = this.index.get(id);
    if (s) this.index.touch(s, Date.now());
    return s;
  }

  delete(id: string): boolean {
    const s = this.index.get(id);
    if (!s) return false;
    this.end(s);
    return true;
  }

  /** Ends every session `pred` picks (say, those of a revoked principal); returns how many. */
  deleteWhere(pred: (s: LegacySession) => boolean): number {
    const picked = [...this.index.values()].filter(pred);
    for (const s of picked) this.end(s);
    return picked.length;
  }

  /**
   * Ends sessions whose client sent nothing for the idle timeout. An open GET stream does not
   * keep one alive (the keep-alives on it are the server's); a call in flight does.
   */
  sweep(now: number): void {
    for (const s of [...this.index.expired(now)]) this.end(s);
  }

  closeAll(): void {
    clearInterval(this.sweeper);
    for (const s of [...this.index.values()]) this.end(s);
  }

  private end(s: LegacySession): void {
    this.index.remove(s);
    for (const ctl of s.inflight.values()) ctl.abort(localError('session_ended'));
    s.inflight.clear();
    if (s.outgoing) {
      for (const pending of s.outgoing.values()) pending.reject(localError('session_ended'));
      s.outgoing.clear();
    }
    s.stream?.end();
    s.stream = undefined;
    s.resumable?.clear();
    resetSubscriptions(s, undefined);
  }
}
