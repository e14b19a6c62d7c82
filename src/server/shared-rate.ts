/**
 * `limits.rate.global`: this process's side of the cluster's shared buckets. The local bucket
 * has already admitted a request; its token is taken from the shared bucket in the background,
 * and a shared refusal refuses the key here until the shared bucket has a token again.
 *
 * One take per key is in flight at a time: requests admitted meanwhile are owed, and the next
 * take asks for all of them at once. So the store sees at most one command per key per round
 * trip, however fast the requests come, and a store that stops answering holds at most one
 * pending command per key (and at most `maxInFlight` keys) instead of one per request: before,
 * a hung Redis grew the hub by ~40 MB a second under load.
 */
/** A bucket rule as the rate limiter holds it. */
interface Rule {
  perSecond: number;
  burst: number;
}

/** The cluster's buckets, as this module needs them (server/ does not import cluster/). */
export interface GlobalBuckets {
  take(
    key: string,
    rule: { capacity: number; refillPerSecond: number },
    cost?: number,
  ): Promise<{ allowed: boolean; retryAfterMs: number }>;
}

/** Keys with a take in flight, at most (beyond, the local bucket decides alone). */
export const DEFAULT_MAX_IN_FLIGHT = 1000;

export class SharedRate {
  /** Keys the shared buckets refused, until when (performance.now() ms). */
  private readonly blocked = new Map<string, number>();
  /** Keys with a take in flight, and the requests admitted since it left. */
  private readonly owed = new Map<string, number>();

  constructor(
    private readonly global: GlobalBuckets,
    private readonly maxKeys: number,
    private readonly maxInFlight = DEFAULT_MAX_IN_FLIGHT,
  ) {}

  /** After the local bucket admitted a request of `key`: 0, or ms until the shared one allows. */
  take(key: string, rule: Rule, now: number): number {
    const until = this.blocked.get(key);
    if (until !== undefined) {
      if (until > now) return Math.ceil(until - now);
      this.blocked.delete(key);
    }
    const owed = this.owed.get(key);
    if (owed !== undefined) this.owed.set(key, owed + 1);
    else if (this.owed.size < this.maxInFlight) this.send(key, rule, 1);
    return 0;
  }

  /** Takes in flight (tests, status). */
  get inFlight(): number {
    return this.owed.size;
  }

  private send(key: string, rule: Rule, cost: number): void {
    this.owed.set(key, 0);
    const after = (ok: boolean) => {
      const more = this.owed.get(key) ?? 0;
      this.owed.delete(key);
      // A failed store lets requests through (the local bucket still applies): what is owed
      // is dropped rather than retried into a store that is not answering.
      if (ok && more > 0 && !this.blocked.has(key)) this.send(key, rule, more);
    };
    // A take asks for at most a full bucket: what a process admits in one round trip is
    // bounded by its own bucket, so this cuts only after a long stall of the store.
    this.global
      .take(
        key,
        { capacity: rule.burst, refillPerSecond: rule.perSecond },
        Math.min(cost, rule.burst),
      )
      .then(
        (r) => {
          if (!r.allowed) {
            if (this.blocked.size >= this.maxKeys) this.blocked.clear();
            this.blocked.set(key, performance.now() + Math.max(1, r.retryAfterMs));
          }
          after(true);
        },
        () => after(false),
      );
  }
}
