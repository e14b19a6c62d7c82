/**
 * The size and rate bounds of the log, notice and progress messages one call sends its client,
 * whoever produced them (a plugin's `notice`/`log`/progress, `execute`, an upstream's
 * notifications passed through): too long is cut with a marker, too frequent is dropped and
 * counted, and the client hears once how many were dropped when the rate allows again.
 */
import type { FlowLimits } from './flow-limits.js';

/** A call's token bucket of messages (made on its first message). */
export class NoticeGate {
  private tokens: number;
  private at: number;
  /** Messages dropped since the client was last told. */
  dropped = 0;

  constructor(private readonly flow: FlowLimits) {
    this.tokens = flow.noticeBurst;
    this.at = performance.now();
  }

  /** True when one more message may go now; a refused one is counted as dropped. */
  admit(): boolean {
    const now = performance.now();
    const flow = this.flow;
    this.tokens = Math.min(
      flow.noticeBurst,
      this.tokens + ((now - this.at) * flow.noticesPerSecond) / 1000,
    );
    this.at = now;
    if (this.tokens >= 1) {
      this.tokens -= 1;
      return true;
    }
    this.dropped++;
    flow.refused?.('notice_rate');
    return false;
  }

  /** The warning owed for dropped messages (once per run of drops), or undefined. */
  takeWarning(): string | undefined {
    const n = this.dropped;
    if (n === 0) return undefined;
    this.dropped = 0;
    return `${n} log/notice/progress messages dropped: more than ${this.flow.noticesPerSecond} per second (limits.notices.per_second)`;
  }
}

/**
 * `text` cut to at most `max` bytes with a marker naming the limit `limit` (the marker is
 * counted in), or `text` itself when it fits.
 */
export function cutText(text: string, max: number, limit: number): string {
  const bytes = Buffer.byteLength(text);
  if (bytes <= max) return text;
  const marker = ` [truncated: ${bytes} bytes, at most ${limit} (limits.notices.message_bytes)]`;
  const budget = Math.max(0, max - marker.length - 64);
  let cut = text.slice(0, budget);
  // A UTF-16 unit is at most 3 UTF-8 bytes: a third of the budget always fits.
  if (Buffer.byteLength(cut) > budget) cut = text.slice(0, Math.floor(budget / 3));
  // Never leave half a surrogate pair behind.
  const last = cut.charCodeAt(cut.length - 1);
  if (last >= 0xd800 && last <= 0xdbff) cut = cut.slice(0, -1);
  return cut + marker;
}
