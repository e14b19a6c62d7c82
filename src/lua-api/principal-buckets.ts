/**
 * One token bucket per principal, for the share of a plugin's message rate each principal may
 * take for its own (`plugin_limits.messages_per_second_per_principal`). The table is bounded: a
 * bucket untouched for a second is full again, the same as no entry, so it is forgotten when a
 * new principal comes; and past MAX_PRINCIPAL_BUCKETS principals active within one second the
 * least recently used is dropped (it comes back full, which costs at most one burst of its share,
 * never a refusal of another).
 */

/** Principals' buckets kept at most (each a few dozen bytes). */
export const MAX_PRINCIPAL_BUCKETS = 4096;

export interface Bucket {
  tokens: number;
  last: number;
}

export class PrincipalBuckets {
  /** Least recently used first: each use moves its entry to the back. */
  private readonly buckets = new Map<string, Bucket>();
  /** The principal at the back of `buckets`. */
  private newest: string | undefined;
  /** Milliseconds an empty bucket takes to fill again (burst: one second's worth). */
  private readonly fillMs = 1000;

  constructor(
    private readonly rate: number,
    private readonly max = MAX_PRINCIPAL_BUCKETS,
  ) {}

  /** `who`'s bucket refilled to `now` (a new one is full); the caller takes its token. */
  refill(who: string, now: number): Bucket {
    let b = this.buckets.get(who);
    if (b === undefined) {
      // Only a new principal grows the table: the place to forget full buckets and keep the bound.
      this.forgetFull(now);
      if (this.buckets.size >= this.max) this.dropOldest();
      b = { tokens: this.rate, last: now };
      this.buckets.set(who, b);
    } else {
      b.tokens = Math.min(this.rate, b.tokens + ((now - b.last) / 1000) * this.rate);
      b.last = now;
      // To the back (most recently used), unless it is there already: a flood of one principal
      // costs one lookup a message, not a delete and an insert.
      if (who !== this.newest) {
        this.buckets.delete(who);
        this.buckets.set(who, b);
      }
    }
    this.newest = who;
    return b;
  }

  /** Entries kept now (for tests and the docs' bound). */
  get size(): number {
    return this.buckets.size;
  }

  /** Drops the buckets from the front that have had a second to fill: O(1) per dropped entry. */
  private forgetFull(now: number): void {
    for (const [who, b] of this.buckets) {
      if (now - b.last < this.fillMs) return;
      this.buckets.delete(who);
    }
  }

  private dropOldest(): void {
    for (const who of this.buckets.keys()) {
      this.buckets.delete(who);
      return;
    }
  }
}
