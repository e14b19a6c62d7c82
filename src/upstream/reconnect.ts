/**
 * When an upstream connection (connection.ts) tries again: a delay doubling from `backoffMs` up
 * to `maxBackoffMs` after each failure, back to the start once connected, except after a flood
 * of requests (request-gate.ts): then the delay doubles with each flood and is never reset, so a
 * hostile upstream costs the hub less and less.
 */
export class Reconnect {
  private timer: NodeJS.Timeout | undefined;
  private delay: number;
  private floodDelay: number | undefined;
  private readonly first: number;
  private readonly max: number;

  constructor(backoffMs = 250, maxBackoffMs = 30_000) {
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
    this.delay = this.floodDelay ?? this.first;
  }

  /** The upstream flooded the hub: the delay before the next attempt, in ms. */
  flooded(): number {
    this.floodDelay = Math.min((this.floodDelay ?? 500) * 2, this.max);
    this.delay = this.floodDelay;
    return this.delay;
  }
}
