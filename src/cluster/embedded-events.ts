/**
 * The shared SSE event log in the machine's SQLite file (`embedded-db.ts`), for the `--workers`
 * of one machine: each stream's events (`stream_events`), and its accounting (`stream_log`: its
 * principal, bytes and last append; `stream_log_bytes`: the bytes of all, `''`, and of each
 * principal, `p:<principal>`). Past a bound the streams written least recently are forgotten
 * whole, as past their TTL; each change is one transaction, so the workers' appends add up.
 */
import type Database from 'better-sqlite3';
import {
  EVENT_OVERHEAD,
  STREAM_OVERHEAD,
  type EventReplay,
  type RecordLimits,
} from './session-records.js';

interface LogRow {
  principal: string;
  bytes: number;
}

/** The accounting row of every stream together. */
const ALL = '';

export class EmbeddedEventLog {
  constructor(
    private readonly db: Database.Database,
    private readonly limits: Readonly<RecordLimits>,
  ) {}

  append(stream: string, seq: number, data: string, principal: string): void {
    // Too large to keep: a row without data marks the gap, so a replay says it is incomplete.
    const kept = Buffer.byteLength(data) <= this.limits.maxEventBytes ? data : null;
    this.db.transaction(() => {
      const now = Date.now();
      this.expire(now, 100);
      const known = this.row(stream) !== undefined;
      // Its start was dropped (TTL, a bound, delivered): a resumption gets 404, not a part.
      if (seq > 0 && !known) return;
      let cost = (kept === null ? 0 : Buffer.byteLength(kept)) + EVENT_OVERHEAD;
      if (!known) cost += STREAM_OVERHEAD;
      this.db
        .prepare('INSERT OR REPLACE INTO stream_events (stream, seq, data, at) VALUES (?, ?, ?, ?)')
        .run(stream, seq, kept, now);
      cost -= this.trim(stream, seq - this.limits.maxEventsPerStream);
      this.db
        .prepare(
          `INSERT INTO stream_log (stream, principal, bytes, at) VALUES (?, ?, ?, ?)
           ON CONFLICT (stream) DO UPDATE SET bytes = bytes + excluded.bytes, at = excluded.at`,
        )
        .run(stream, principal, cost, now);
      this.count(ALL, cost);
      this.count(`p:${principal}`, cost);
      this.bound(`p:${principal}`, this.limits.eventLogBytesPerPrincipal, principal);
      this.bound(ALL, this.limits.eventLogBytes, undefined);
    })();
  }

  after(stream: string, afterSeq: number): EventReplay | undefined {
    const live = this.db
      .prepare<[string, number], number>('SELECT 1 FROM stream_log WHERE stream = ? AND at >= ?')
      .pluck()
      .get(stream, Date.now() - this.limits.eventTtlMs);
    if (live === undefined) return undefined;
    const rows = this.db
      .prepare<[string], { seq: number; data: string | null }>(
        'SELECT seq, data FROM stream_events WHERE stream = ? ORDER BY seq',
      )
      .all(stream);
    return replayOf(rows, afterSeq);
  }

  drop(stream: string): void {
    this.db.transaction(() => this.forget(stream))();
  }

  /** Forgets the streams past their TTL, and events no stream accounts for (older versions). */
  sweep(now: number): void {
    this.db.transaction(() => {
      this.expire(now, Number.MAX_SAFE_INTEGER);
      this.db
        .prepare(
          'DELETE FROM stream_events WHERE at < ? AND stream NOT IN (SELECT stream FROM stream_log)',
        )
        .run(now - this.limits.eventTtlMs);
    })();
  }

  private row(stream: string): LogRow | undefined {
    return this.db
      .prepare<[string], LogRow>('SELECT principal, bytes FROM stream_log WHERE stream = ?')
      .get(stream);
  }

  private expire(now: number, most: number): void {
    const old = this.db
      .prepare<[number, number], string>('SELECT stream FROM stream_log WHERE at < ? LIMIT ?')
      .pluck()
      .all(now - this.limits.eventTtlMs, most);
    for (const s of old) this.forget(s);
  }

  /** Drops a stream's events up to `seq`; returns what they counted. */
  private trim(stream: string, seq: number): number {
    if (seq < 0) return 0;
    const gone = this.db
      .prepare<[number, string, number], number>(
        `SELECT coalesce(sum(length(CAST(data AS BLOB))), 0) + count(*) * ?
         FROM stream_events WHERE stream = ? AND seq <= ?`,
      )
      .pluck()
      .get(EVENT_OVERHEAD, stream, seq)!;
    this.db.prepare('DELETE FROM stream_events WHERE stream = ? AND seq <= ?').run(stream, seq);
    return gone;
  }

  private count(who: string, bytes: number): void {
    this.db
      .prepare(
        `INSERT INTO stream_log_bytes (who, bytes) VALUES (?, ?)
         ON CONFLICT (who) DO UPDATE SET bytes = bytes + excluded.bytes`,
      )
      .run(who, bytes);
    this.db.prepare('DELETE FROM stream_log_bytes WHERE who = ? AND bytes <= 0').run(who);
  }

  private bytesOf(who: string): number {
    return (
      this.db
        .prepare<[string], number>('SELECT bytes FROM stream_log_bytes WHERE who = ?')
        .pluck()
        .get(who) ?? 0
    );
  }

  /** Forgets the least recently written streams (of `principal`, or of all) while over `max`. */
  private bound(who: string, max: number, principal: string | undefined): void {
    const all = this.db
      .prepare<[], string>('SELECT stream FROM stream_log ORDER BY at, rowid LIMIT 1')
      .pluck();
    const own = this.db
      .prepare<[string], string>(
        'SELECT stream FROM stream_log WHERE principal = ? ORDER BY at, rowid LIMIT 1',
      )
      .pluck();
    while (this.bytesOf(who) > max) {
      const s = principal === undefined ? all.get() : own.get(principal);
      if (s === undefined) return;
      this.forget(s);
    }
  }

  private forget(stream: string): void {
    const row = this.row(stream);
    this.db.prepare('DELETE FROM stream_events WHERE stream = ?').run(stream);
    if (row === undefined) return;
    this.db.prepare('DELETE FROM stream_log WHERE stream = ?').run(stream);
    this.count(ALL, -row.bytes);
    this.count(`p:${row.principal}`, -row.bytes);
  }
}

/**
 * The replay of a stream from its kept events: those after `afterSeq`, and whether any event
 * in between was dropped (evicted by the count bound, or too large to keep).
 */
export function replayOf(
  rows: { seq: number; data: string | null }[],
  afterSeq: number,
): EventReplay | undefined {
  if (rows.length === 0) return undefined;
  let expected = afterSeq + 1;
  let complete = rows[0]!.seq <= expected;
  const head = rows.find((r) => r.data !== null)?.data ?? undefined;
  const events: EventReplay['events'] = [];
  for (const r of rows) {
    if (r.seq <= afterSeq) continue;
    if (r.seq !== expected || r.data === null) complete = false;
    expected = r.seq + 1;
    if (r.data !== null) events.push({ seq: r.seq, data: r.data });
  }
  return head === undefined ? { events, complete } : { events, complete, head };
}
