/**
 * Which of a process's 2025 session copies are known to match their shared records, so a
 * request can be served without reading the store (`shared-sessions.ts`). A copy is fresh when
 * it was read (or written here) since the last change announced for its session, while the bus
 * was live and confirmed to carry those announcements, and not longer ago than `cacheMs` (the
 * backstop for a message the at-most-once bus lost). Knows nothing of HTTP or the stores.
 */
import type { MessageBus } from '../cluster/bus.js';

export class SessionFreshness {
  /** Session id → when its record was read. */
  private readonly at = new Map<string, number>();
  /** Bumped by every change heard and every bus gap: a read that raced one is not trusted. */
  private changes = 0;
  /** Until the bus has confirmed this process's subscriptions, nothing is fresh. */
  private listening = false;
  private readonly offGap: () => void;

  constructor(
    private readonly bus: MessageBus,
    private readonly cacheMs: number,
    /** At most this many ids are kept; past it the table is emptied (copies are read again). */
    private readonly maxEntries: number,
    onError: (err: unknown) => void,
  ) {
    this.offGap = bus.onGap(() => this.invalidateAll());
    bus.ready().then(
      () => (this.listening = true),
      (err: unknown) => onError(err),
    );
  }

  /** A token for a read about to start; `settle` trusts the read only if nothing changed since. */
  begin(): number {
    return this.trusted() ? this.changes : -1;
  }

  settle(id: string, token: number): void {
    if (token >= 0 && token === this.changes && this.trusted()) this.mark(id);
  }

  /** A copy this process just wrote and nobody else knows (a new session). */
  written(id: string): void {
    if (this.trusted()) this.mark(id);
  }

  isFresh(id: string): boolean {
    const at = this.at.get(id);
    if (at === undefined) return false;
    if (this.bus.live && Date.now() - at < this.cacheMs) return true;
    this.at.delete(id);
    return false;
  }

  /** Another process changed the session (or it ended): the copy must be read again. */
  stale(id: string): void {
    this.changes++;
    this.at.delete(id);
  }

  forget(id: string): void {
    this.at.delete(id);
  }

  invalidateAll(): void {
    this.changes++;
    this.at.clear();
  }

  /** Drops entries too old to be trusted anyway (a periodic sweep). */
  sweep(now: number): void {
    for (const [id, at] of this.at) if (now - at >= this.cacheMs) this.at.delete(id);
  }

  close(): void {
    this.offGap();
    this.at.clear();
  }

  private trusted(): boolean {
    return this.listening && this.bus.live;
  }

  private mark(id: string): void {
    if (this.at.size >= this.maxEntries) this.at.clear();
    this.at.set(id, Date.now());
  }
}
