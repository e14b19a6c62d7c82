/**
 * HTTP requests each principal has running (`limits.http_in_flight_per_principal`). Each
 * dispatched request is held from its dispatch to the end of its call, however that comes (an
 * answer, an error, a timeout, a cut stream, a cancellation when its client went away), so a
 * principal that sends requests faster than they end is refused at once instead of piling up
 * calls; another principal's count is its own. stdio has its own bound (`limits.stdio_in_flight`).
 */
import { wireError, type WireError } from '../errors.js';
import type { RefusalCounter } from './session-limits.js';

/** The principal of callers nobody authenticated (one count for all of them). */
const ANONYMOUS = '';

/** The retry hint of a refusal: in flight calls usually end within a second. */
const RETRY_AFTER_MS = 1000;

export class PrincipalFlights {
  /** Requests running, by principal; a principal with none has no entry (the map stays small). */
  private readonly running = new Map<string, number>();

  constructor(
    private readonly max: number,
    private readonly refused?: RefusalCounter,
  ) {}

  /** Takes `n` places for `principal`; the refusal (counted) when that would pass the bound. */
  take(principal: string | undefined, n: number): WireError | undefined {
    const key = principal ?? ANONYMOUS;
    const now = this.running.get(key) ?? 0;
    if (now + n > this.max) {
      this.refused?.('http_in_flight_principal');
      return wireError(
        'http_in_flight_principal',
        { max: this.max },
        { limit: 'limits.http_in_flight_per_principal', retryAfterMs: RETRY_AFTER_MS },
      );
    }
    this.running.set(key, now + n);
    return undefined;
  }

  /** Gives back `n` places of `principal` (once per take). */
  release(principal: string | undefined, n: number): void {
    const key = principal ?? ANONYMOUS;
    const left = (this.running.get(key) ?? 0) - n;
    if (left > 0) this.running.set(key, left);
    else this.running.delete(key);
  }

  /** Requests `principal` has running (tests, status). */
  of(principal: string | undefined): number {
    return this.running.get(principal ?? ANONYMOUS) ?? 0;
  }
}
