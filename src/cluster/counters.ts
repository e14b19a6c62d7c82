/**
 * Counters that must be global when the hub is many processes: token buckets (a rate limit per
 * principal, per tool...). `take` asks for `cost` tokens of the bucket `key`; a bucket holds at
 * most `capacity` tokens and refills at `refillPerSecond`. Three carriers: this process's memory
 * (`LocalCounters`), the machine's SQLite file for `--workers` (`EmbeddedCounters`), and Redis
 * (`redis-counters.ts`, one Lua script with Redis's clock).
 */
import type Database from 'better-sqlite3';

export interface BucketRule {
  capacity: number;
  refillPerSecond: number;
}

export interface TakeResult {
  allowed: boolean;
  /** Tokens left after this take. */
  remaining: number;
  /** When refused: how long until `cost` tokens are there (for a Retry-After). */
  retryAfterMs: number;
}

export interface SharedCounters {
  take(key: string, rule: BucketRule, cost?: number): Promise<TakeResult>;
  close(): Promise<void>;
}

export function checkRule(rule: BucketRule, cost: number): void {
  if (!(rule.capacity > 0) || !(rule.refillPerSecond > 0))
    throw new Error('a bucket needs a positive capacity and refill rate');
  if (!(cost > 0) || cost > rule.capacity)
    throw new Error(`a take costs from 0 to the capacity (${rule.capacity}), got ${cost}`);
}

/** A full bucket refills in this long; an untouched bucket is forgotten after it. */
export function idleLifetimeMs(rule: BucketRule): number {
  return Math.ceil((rule.capacity * 1000) / rule.refillPerSecond) + 1000;
}

/** The bucket arithmetic, shared by the local and embedded carriers (the Lua script mirrors it). */
export function takeFrom(
  state: { tokens: number; at: number } | undefined,
  rule: BucketRule,
  cost: number,
  now: number,
): { state: { tokens: number; at: number }; result: TakeResult } {
  const elapsed = Math.max(0, now - (state?.at ?? now));
  let tokens = Math.min(
    rule.capacity,
    (state?.tokens ?? rule.capacity) + (elapsed * rule.refillPerSecond) / 1000,
  );
  const allowed = tokens >= cost;
  if (allowed) tokens -= cost;
  const retryAfterMs = allowed ? 0 : Math.ceil(((cost - tokens) * 1000) / rule.refillPerSecond);
  return { state: { tokens, at: now }, result: { allowed, remaining: tokens, retryAfterMs } };
}

/** One process's buckets; at most `maxKeys`, the least recently used forgotten first. */
export class LocalCounters implements SharedCounters {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();

  constructor(private readonly maxKeys = 100_000) {}

  async take(key: string, rule: BucketRule, cost = 1): Promise<TakeResult> {
    checkRule(rule, cost);
    const before = this.buckets.get(key);
    const { state, result } = takeFrom(before, rule, cost, Date.now());
    this.buckets.delete(key);
    if (this.buckets.size >= this.maxKeys)
      this.buckets.delete(this.buckets.keys().next().value as string);
    this.buckets.set(key, state);
    return result;
  }

  async close(): Promise<void> {
    this.buckets.clear();
  }
}

/** The buckets of one machine's workers, in the cluster SQLite file; idle ones swept. */
export class EmbeddedCounters implements SharedCounters {
  private readonly sweeper: NodeJS.Timeout;

  constructor(private readonly db: Database.Database) {
    this.sweeper = setInterval(
      () => db.prepare('DELETE FROM buckets WHERE expires < ?').run(Date.now()),
      60_000,
    );
    this.sweeper.unref();
  }

  async take(key: string, rule: BucketRule, cost = 1): Promise<TakeResult> {
    checkRule(rule, cost);
    return this.db
      .transaction(() => {
        const now = Date.now();
        const row = this.db
          .prepare<[string, number], { tokens: number; at: number }>(
            'SELECT tokens, at FROM buckets WHERE key = ? AND expires >= ?',
          )
          .get(key, now);
        const { state, result } = takeFrom(row, rule, cost, now);
        this.db
          .prepare('INSERT OR REPLACE INTO buckets (key, tokens, at, expires) VALUES (?, ?, ?, ?)')
          .run(key, state.tokens, state.at, now + idleLifetimeMs(rule));
        return result;
      })
      .immediate();
  }

  async close(): Promise<void> {
    clearInterval(this.sweeper);
  }
}
