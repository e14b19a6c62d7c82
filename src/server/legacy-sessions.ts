/**
 * The in-process session layer: 2025-era HTTP sessions made at `initialize` with a crypto-random
 * id, lookup, deletion, the standalone GET stream each may hold, expiry after an idle timeout,
 * and the message bus that writes to those streams.
 */
import { randomBytes } from 'node:crypto';
import { localError } from '../errors.js';
import {
  newSessionState,
  type SessionBus,
  type SessionLayer,
  type SessionRecord,
} from './session.js';

/** A 2025 HTTP session (the in-process session layer's record). */
export type LegacySession = SessionRecord;

export interface SessionStoreOptions {
  /** Idle time after which a session without an open stream ends (default 30 min). */
  idleTimeoutMs?: number;
  /** New sessions beyond this are refused (default 10,000). */
  maxSessions?: number;
}

export class LegacySessionStore implements SessionLayer {
  private readonly sessions = new Map<string, LegacySession>();
  readonly idleTimeoutMs: number;
  readonly maxSessions: number;
  private readonly sweeper: NodeJS.Timeout;

  constructor(opts: SessionStoreOptions = {}) {
    this.idleTimeoutMs = opts.idleTimeoutMs ?? 30 * 60_000;
    this.maxSessions = opts.maxSessions ?? 10_000;
    const every = Math.max(50, Math.min(60_000, Math.floor(this.idleTimeoutMs / 2)));
    this.sweeper = setInterval(() => this.sweep(Date.now()), every);
    this.sweeper.unref();
  }

  get size(): number {
    return this.sessions.size;
  }

  readonly bus: SessionBus = {
    send: (session, json) => {
      if (session.stream === undefined) return false;
      session.stream.send(json);
      return true;
    },
    resourceUpdated: (uri, json) => {
      let note: string | undefined;
      for (const session of this.sessions.values()) {
        if (session.subscriptions?.has(uri) && session.stream !== undefined)
          session.stream.send((note ??= json()));
      }
    },
  };

  /** A new session, or undefined when the store is full. */
  create(principal?: string): LegacySession | undefined {
    if (this.sessions.size >= this.maxSessions) {
      this.sweep(Date.now());
      if (this.sessions.size >= this.maxSessions) return undefined;
    }
    const id = randomBytes(16).toString('hex');
    const session = newSessionState(id) as LegacySession;
    session.lastSeen = Date.now();
    session.stream = undefined;
    session.principal = principal;
    this.sessions.set(id, session);
    return session;
  }

  values(): IterableIterator<LegacySession> {
    return this.sessions.values();
  }

  /** Looks a session up and marks it active. */
  touch(id: string): LegacySession | undefined {
    const s = this.sessions.get(id);
    if (s) s.lastSeen = Date.now();
    return s;
  }

  delete(id: string): boolean {
    const s = this.sessions.get(id);
    if (!s) return false;
    this.sessions.delete(id);
    this.endSession(s);
    return true;
  }

  /** Ends every session `pred` picks (say, those of a revoked principal); returns how many. */
  deleteWhere(pred: (s: LegacySession) => boolean): number {
    let n = 0;
    for (const [id, s] of this.sessions) {
      if (!pred(s)) continue;
      this.sessions.delete(id);
      this.endSession(s);
      n++;
    }
    return n;
  }

  /** Ends sessions idle for longer than the timeout; an open GET stream counts as activity. */
  sweep(now: number): void {
    for (const [id, s] of this.sessions) {
      if (s.stream && !s.stream.closed) continue;
      if (now - s.lastSeen > this.idleTimeoutMs) {
        this.sessions.delete(id);
        this.endSession(s);
      }
    }
  }

  closeAll(): void {
    clearInterval(this.sweeper);
    for (const s of this.sessions.values()) this.endSession(s);
    this.sessions.clear();
  }

  private endSession(s: LegacySession): void {
    for (const ctl of s.inflight.values()) ctl.abort(localError('session_ended'));
    s.inflight.clear();
    if (s.outgoing) {
      for (const pending of s.outgoing.values()) pending.reject(localError('session_ended'));
      s.outgoing.clear();
    }
    s.stream?.end();
    s.stream = undefined;
    s.resumable?.clear();
  }
}
