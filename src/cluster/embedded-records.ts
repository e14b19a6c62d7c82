/**
 * Session records and stream events in the machine's SQLite file (`embedded-db.ts`), shared by
 * the `--workers` of one machine. Each change is one transaction, so two workers changing the
 * same session (a subscription here, a log level there) do not lose each other's write.
 */
import type Database from 'better-sqlite3';
import { EmbeddedEventLog } from './embedded-events.js';
import {
  checkStream,
  recordLimits,
  type AdmitCaps,
  type Admission,
  type EventReplay,
  type ProtocolSessionRecord,
  type RecordLimits,
  type SessionPatch,
  type SessionRecordStore,
} from './session-records.js';

interface Row {
  record: string;
  last_seen: number;
}

export class EmbeddedRecords implements SessionRecordStore {
  readonly limits: Readonly<RecordLimits>;
  private readonly sweeper: NodeJS.Timeout;
  /** When this process last wrote each session's last_seen: closer touches are skipped. */
  private readonly touched = new Map<string, number>();
  /** idle/20 within 1-5 s: a write per session that often at most, not one per request. */
  private readonly touchEveryMs: number;
  private readonly events: EmbeddedEventLog;

  constructor(
    private readonly db: Database.Database,
    limits: Partial<RecordLimits> = {},
  ) {
    this.limits = recordLimits(limits);
    this.events = new EmbeddedEventLog(db, this.limits);
    this.touchEveryMs = Math.max(1000, Math.min(5000, Math.floor(this.limits.idleTimeoutMs / 20)));
    this.sweeper = setInterval(() => this.sweep(Date.now()), 30_000);
    this.sweeper.unref();
  }

  /** Forgets idle sessions and old events (every 30 s, and when the store is full). */
  sweep(now: number): void {
    this.db
      .prepare('DELETE FROM proto_sessions WHERE last_seen < ?')
      .run(now - this.limits.idleTimeoutMs);
    this.events.sweep(now);
  }

  private read(id: string): ProtocolSessionRecord | undefined {
    const row = this.db
      .prepare<[string], Row>('SELECT record, last_seen FROM proto_sessions WHERE id = ?')
      .get(id);
    if (row === undefined || row.last_seen < Date.now() - this.limits.idleTimeoutMs)
      return undefined;
    const rec = JSON.parse(row.record) as ProtocolSessionRecord;
    rec.lastSeen = row.last_seen;
    return rec;
  }

  private write(rec: ProtocolSessionRecord): void {
    this.db
      .prepare(
        'INSERT OR REPLACE INTO proto_sessions (id, principal, record, last_seen) VALUES (?, ?, ?, ?)',
      )
      .run(rec.id, rec.principal ?? null, JSON.stringify(rec), rec.lastSeen);
  }

  private count(): number {
    return this.db.prepare<[], number>('SELECT count(*) FROM proto_sessions').pluck().get()!;
  }

  async create(rec: ProtocolSessionRecord): Promise<boolean> {
    return (await this.admit(rec, {})).ok;
  }

  /** One immediate transaction: every worker's admission sees the others' (a cluster-wide cap). */
  async admit(rec: ProtocolSessionRecord, caps: AdmitCaps): Promise<Admission> {
    return this.db
      .transaction((): Admission => {
        const now = Date.now();
        const principal = rec.principal ?? null;
        const evicted: string[] = [];
        const perMax = caps.perPrincipal ?? this.limits.maxSessions;
        // last_seen lags activity by up to touchEveryMs (touches are thinned): a session counts
        // as idle for eviction only past twice that, so an active one is never taken.
        const cutoff =
          caps.evictIdleMs === undefined
            ? undefined
            : now - Math.max(caps.evictIdleMs, 2 * this.touchEveryMs);
        if (this.countOf(principal, now) >= perMax) {
          const victim = this.oldestIdle(principal, cutoff);
          if (victim === undefined) return { ok: false, limit: 'sessions_per_principal' };
          evicted.push(victim);
        }
        if (this.count() - evicted.length >= this.limits.maxSessions) {
          this.sweep(now);
          if (this.count() - evicted.length >= this.limits.maxSessions) {
            const victim = this.oldestIdle(undefined, cutoff, evicted[0]);
            if (victim === undefined) return { ok: false, limit: 'sessions' };
            evicted.push(victim);
          }
        }
        for (const id of evicted)
          this.db.prepare('DELETE FROM proto_sessions WHERE id = ?').run(id);
        this.write({ ...rec, subscriptions: [...new Set(rec.subscriptions)] });
        for (const id of evicted) this.touched.delete(id);
        this.touched.set(rec.id, rec.lastSeen);
        return { ok: true, evicted };
      })
      .immediate();
  }

  private countOf(principal: string | null, now: number): number {
    return this.db
      .prepare<[string | null, number], number>(
        'SELECT count(*) FROM proto_sessions WHERE principal IS ? AND last_seen >= ?',
      )
      .pluck()
      .get(principal, now - this.limits.idleTimeoutMs)!;
  }

  /** The oldest session silent since `cutoff` (of `principal`, or of anybody when undefined). */
  private oldestIdle(
    principal: string | null | undefined,
    cutoff: number | undefined,
    except = '',
  ): string | undefined {
    if (cutoff === undefined) return undefined;
    const own = principal === undefined ? '' : 'principal IS ? AND ';
    const args = principal === undefined ? [cutoff, except] : [principal, cutoff, except];
    return this.db
      .prepare<unknown[], string>(
        `SELECT id FROM proto_sessions WHERE ${own}last_seen <= ? AND id != ? ORDER BY last_seen LIMIT 1`,
      )
      .pluck()
      .get(...args);
  }

  async get(id: string): Promise<ProtocolSessionRecord | undefined> {
    return this.read(id);
  }

  /** Read, change, write in one immediate transaction; false when the session is gone. */
  private change(id: string, fn: (rec: ProtocolSessionRecord) => void): boolean {
    return this.db
      .transaction(() => {
        const rec = this.read(id);
        if (rec === undefined) return false;
        fn(rec);
        this.write(rec);
        return true;
      })
      .immediate();
  }

  async update(id: string, patch: SessionPatch): Promise<boolean> {
    return this.change(id, (rec) => applyPatch(rec, patch));
  }

  async touch(id: string): Promise<boolean> {
    const now = Date.now();
    const last = this.touched.get(id);
    if (last !== undefined && now - last < this.touchEveryMs) return true;
    if (this.touched.size >= this.limits.maxSessions) this.touched.clear();
    this.touched.set(id, now);
    const changed = this.db
      .prepare('UPDATE proto_sessions SET last_seen = ? WHERE id = ? AND last_seen >= ?')
      .run(now, id, now - this.limits.idleTimeoutMs).changes;
    return changed > 0;
  }

  async subscribe(id: string, uri: string): Promise<'ok' | 'full' | 'gone'> {
    let full = false;
    const found = this.change(id, (rec) => {
      if (rec.subscriptions.includes(uri)) return;
      if (rec.subscriptions.length >= this.limits.maxSubscriptions) full = true;
      else rec.subscriptions.push(uri);
    });
    return !found ? 'gone' : full ? 'full' : 'ok';
  }

  async unsubscribe(id: string, uri: string): Promise<boolean> {
    let had = false;
    this.change(id, (rec) => {
      had = rec.subscriptions.includes(uri);
      rec.subscriptions = rec.subscriptions.filter((u) => u !== uri);
    });
    return had;
  }

  async delete(id: string): Promise<boolean> {
    this.touched.delete(id);
    return this.db.prepare('DELETE FROM proto_sessions WHERE id = ?').run(id).changes > 0;
  }

  async sessionsOf(principal: string): Promise<string[]> {
    return this.db
      .prepare<[string], string>('SELECT id FROM proto_sessions WHERE principal = ?')
      .pluck()
      .all(principal);
  }

  async appendEvent(stream: string, seq: number, data: string, principal = ''): Promise<void> {
    checkStream(stream);
    this.events.append(stream, seq, data, principal);
  }

  async eventsAfter(stream: string, afterSeq: number): Promise<EventReplay | undefined> {
    checkStream(stream);
    return this.events.after(stream, afterSeq);
  }

  async dropStream(stream: string): Promise<void> {
    checkStream(stream);
    this.events.drop(stream);
  }

  async markAlive(instance: string, ttlMs: number): Promise<void> {
    const now = Date.now();
    this.db
      .prepare('INSERT OR REPLACE INTO instances (id, until) VALUES (?, ?)')
      .run(instance, now + ttlMs);
    // Killed workers' rows go once long expired.
    this.db.prepare('DELETE FROM instances WHERE until < ?').run(now - 60_000);
  }

  async isAlive(instance: string): Promise<boolean> {
    const row = this.db.prepare('SELECT until FROM instances WHERE id = ?').get(instance) as
      { until: number } | undefined;
    return row !== undefined && row.until >= Date.now();
  }

  async close(): Promise<void> {
    clearInterval(this.sweeper);
  }
}

export function applyPatch(rec: ProtocolSessionRecord, patch: SessionPatch): void {
  for (const [k, v] of Object.entries(patch)) {
    if (v === undefined) continue;
    const key = k as keyof ProtocolSessionRecord;
    if (v === null) delete rec[key];
    else (rec as unknown as Record<string, unknown>)[key] = v;
  }
}
