/**
 * When an upstream connection (connection.ts) tries again: a delay doubling from `backoffMs` up
 * to `maxBackoffMs` after each failure, back to the start once connected, except after a flood
 * of requests (request-gate.ts): then the delay doubles with each flood, so a hostile upstream
 * costs the hub less and less, until FORGIVE_MS pass without a flood (an upstream that flooded
 * once, in a bad moment, is not held at the longest delay for the rest of the hub's life).
 */
export const FORGIVE_MS = 10 * 60_000;

export class Reconnect {
  private timer: NodeJS.Timeout | undefined;
  private delay: number;
  private floodDelay: number | undefined;
  private lastFlood = -Infinity;
  private readonly first: number;
  private readonly max: number;

  constructor(
    backoffMs = 250,
    maxBackoffMs = 30_000,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.first = backoffMs;
    this.max = maxBackoffMs;
    this.delay = backoffMs;
  }

  /** Runs `retry` after the current delay (once: a pending retry is kept); doubles the delay. */
  schedule(retry: () => void): void {
    if (this.timer) return;
    const delay = this.delay;
    this.delay = Math.min(this.delay * 2, this.max);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      retry();
    }, delay);
    this.timer.unref();
  }

  cancel(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** Connected: the next failure waits the first delay again (or the flood delay). */
  connected(): void {
    this.forgive();
    this.delay = this.floodDelay ?? this.first;
  }

  /** The upstream flooded the hub: the delay before the next attempt, in ms. */
  flooded(): number {
    this.forgive();
    this.lastFlood = this.now();
    this.floodDelay = Math.min((this.floodDelay ?? 500) * 2, this.max);
    this.delay = this.floodDelay;
    return this.delay;
  }

  private forgive(): void {
    if (this.now() - this.lastFlood >= FORGIVE_MS) this.floodDelay = undefined;
  }
}
