/**
 * What resource subscriptions may take of a hub process, per principal and in all
 * (`limits.subscriptions.bytes_*`). The per-session bounds cap one session (1,000 URIs, 65,536
 * characters), but a principal may hold 1,000 sessions and 64 listen streams: one unauthenticated
 * client subscribed 1,000,000 short URIs that way and took a hub +242 MiB, and ten principals
 * could take ten times that. Every subscription a 2025 session or a 2026-07-28 listen stream
 * holds is charged here, and a new one past a bound is refused (nothing already held is dropped).
 */
import { wireError, type WireError } from '../errors.js';

/**
 * Bytes a subscription counts besides its URI's characters: its entry in the session's set and
 * in the hub's URI index (measured: ~240 bytes each for short URIs).
 */
export const SUBSCRIPTION_OVERHEAD = 256;
export const DEFAULT_SUBSCRIPTION_BYTES_PER_PRINCIPAL = 16 * 1024 * 1024;
export const DEFAULT_SUBSCRIPTION_BYTES_TOTAL = 128 * 1024 * 1024;

const NOBODY = '\u0000nobody';

/** What one subscription to `uri` counts. */
export function subscriptionCost(uri: string): number {
  return uri.length + SUBSCRIPTION_OVERHEAD;
}

export class SubscriptionBudget {
  private readonly held = new Map<string, number>();
  private total = 0;

  constructor(
    readonly maxPerPrincipal = DEFAULT_SUBSCRIPTION_BYTES_PER_PRINCIPAL,
    readonly maxTotal = DEFAULT_SUBSCRIPTION_BYTES_TOTAL,
  ) {}

  /** Bytes counted now, in all (tests, status). */
  get bytes(): number {
    return this.total;
  }

  /** Bytes `principal` holds now. */
  of(principal: string | undefined): number {
    return this.held.get(principal ?? NOBODY) ?? 0;
  }

  /** The refusal of `bytes` more for `principal`, naming the bound, or undefined. */
  refusal(
    principal: string | undefined,
    bytes: number,
  ): { error: WireError; limit: string } | undefined {
    if (this.of(principal) + bytes > this.maxPerPrincipal)
      return {
        error: wireError('subscription_bytes_principal', { max: this.maxPerPrincipal }),
        limit: 'subscription_bytes_principal',
      };
    if (this.total + bytes > this.maxTotal)
      return {
        error: wireError('subscription_bytes_total', { max: this.maxTotal }),
        limit: 'subscription_bytes_total',
      };
    return undefined;
  }

  /** Counts `bytes` more (negative: fewer) for `principal`. Never refuses: check first. */
  charge(principal: string | undefined, bytes: number): void {
    const key = principal ?? NOBODY;
    const now = (this.held.get(key) ?? 0) + bytes;
    if (now > 0) this.held.set(key, now);
    else this.held.delete(key);
    this.total += bytes;
  }
}
