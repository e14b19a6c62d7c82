/**
 * The bound on requests an upstream sends the hub (ping, sampling, elicitation, roots/list on its
 * server-to-client stream). The SDK client handles each one at once and sends its answer (a POST
 * over HTTP, each fetch another listener on the transport's shared AbortSignal; a line on a stdio
 * child's stdin), so a flood of pings held the hub's thread and grew its memory without end.
 * Per upstream: at most `perSecond` requests are taken a second (a token bucket, burst
 * `perSecond`), and at most `inFlight` at once, from arrival until their answer is sent (a POST
 * the upstream does not finish, a stdin the child does not read, keeps its place); the rest are
 * dropped unanswered (an error answer would cost the same send) and counted. Dropping still
 * costs the hub's thread the parsing of each message, so an upstream that goes on past
 * FLOOD_FACTOR times its rate in one report window is a flood: `onFlood` (the connection drops
 * it and reconnects later, see connection.ts). Notifications are not dropped (progress, logs,
 * list_changed have their own bounds further on), but more than NOTICE_FLOOD_FACTOR times the
 * rate of them in a second is a flood the same way.
 */
import type { JSONRPCMessage } from '@modelcontextprotocol/client';

export const DEFAULT_UPSTREAM_REQUESTS_PER_SECOND = 50;
export const DEFAULT_UPSTREAM_REQUESTS_IN_FLIGHT = 16;

/** Dropped requests in one window, in multiples of the rate, that make a flood. */
export const FLOOD_FACTOR = 10;

/** Notifications in one second, in multiples of the request rate, that make a flood. */
export const NOTICE_FLOOD_FACTOR = 100;

export const REQUESTS_PER_SECOND_KEY = 'plugin_limits.upstream_requests_per_second';
export const REQUESTS_IN_FLIGHT_KEY = 'plugin_limits.upstream_requests_in_flight';

export interface RequestGateOptions {
  perSecond?: number;
  inFlight?: number;
  /** Told what was dropped (a sentence naming the keys), at most once a second. */
  onDropped?: (message: string) => void;
  /** Called once a window when the dropped requests pass FLOOD_FACTOR times the rate. */
  onFlood?: (message: string) => void;
}

type Id = string | number;

export class RequestGate {
  private readonly perSecond: number;
  private readonly maxInFlight: number;
  private tokens: number;
  private last = performance.now();
  /** Ids of the requests taken and not answered yet (an id repeated counts each time). */
  private readonly open = new Map<Id, number>();
  private openCount = 0;
  private dropped = 0;
  private droppedBusy = 0;
  private report: NodeJS.Timeout | undefined;
  private readonly onDropped: ((message: string) => void) | undefined;
  private readonly onFlood: ((message: string) => void) | undefined;
  private flooded = false;
  private notices = 0;
  private noticeWindow = -Infinity;

  constructor(opts: RequestGateOptions = {}) {
    this.perSecond = opts.perSecond ?? DEFAULT_UPSTREAM_REQUESTS_PER_SECOND;
    this.maxInFlight = opts.inFlight ?? DEFAULT_UPSTREAM_REQUESTS_IN_FLIGHT;
    this.tokens = this.perSecond;
    this.onDropped = opts.onDropped;
    this.onFlood = opts.onFlood;
  }

  /** For an incoming request: true to pass it on, false when it is dropped. */
  admit(id: Id): boolean {
    const now = performance.now();
    this.tokens = Math.min(
      this.perSecond,
      this.tokens + ((now - this.last) / 1000) * this.perSecond,
    );
    this.last = now;
    if (this.tokens < 1) return this.drop('rate');
    if (this.openCount >= this.maxInFlight) return this.drop('busy');
    this.tokens--;
    this.open.set(id, (this.open.get(id) ?? 0) + 1);
    this.openCount++;
    return true;
  }

  private drop(why: 'rate' | 'busy'): false {
    if (why === 'rate') this.dropped++;
    else this.droppedBusy++;
    this.report ??= setTimeout(() => this.flushDropped(), 1000).unref();
    if (!this.flooded && this.dropped + this.droppedBusy > FLOOD_FACTOR * this.perSecond) {
      this.flooded = true;
      this.onFlood?.(
        `the upstream sent more than ${FLOOD_FACTOR} times ${this.perSecond} requests a second (${REQUESTS_PER_SECOND_KEY})`,
      );
    }
    return false;
  }

  /** An incoming notification: counted in one-second windows; past the bound, a flood. */
  notified(): void {
    const now = performance.now();
    if (now - this.noticeWindow >= 1000) {
      this.noticeWindow = now;
      this.notices = 0;
    }
    if (++this.notices === NOTICE_FLOOD_FACTOR * this.perSecond + 1)
      this.onFlood?.(
        `the upstream sent more than ${NOTICE_FLOOD_FACTOR * this.perSecond} notifications in a second (${NOTICE_FLOOD_FACTOR} times ${REQUESTS_PER_SECOND_KEY})`,
      );
  }

  /** An answer the client is sending: true when it answers a request taken (see done). */
  answers(message: JSONRPCMessage): boolean {
    return !('method' in message) && 'id' in message && this.open.has(message.id as Id);
  }

  /** The answer to a request taken was sent (or failed): its place is free. */
  done(id: Id): void {
    const n = this.open.get(id);
    if (n === undefined) return;
    if (n > 1) this.open.set(id, n - 1);
    else this.open.delete(id);
    this.openCount--;
  }

  /** The connection is gone: its requests will never be answered. */
  reset(): void {
    this.open.clear();
    this.openCount = 0;
  }

  private flushDropped(): void {
    this.report = undefined;
    this.flooded = false;
    const { dropped, droppedBusy } = this;
    this.dropped = 0;
    this.droppedBusy = 0;
    if (dropped + droppedBusy > 0) this.onDropped?.(this.describe(dropped, droppedBusy));
  }

  /** Stops the pending report, saying what it held (the upstream is closed). */
  close(): void {
    if (this.report) clearTimeout(this.report);
    this.flushDropped();
  }

  private describe(rate: number, busy: number): string {
    const parts: string[] = [];
    if (rate > 0)
      parts.push(`${rate} past ${this.perSecond} per second (${REQUESTS_PER_SECOND_KEY})`);
    if (busy > 0)
      parts.push(`${busy} past ${this.maxInFlight} in flight (${REQUESTS_IN_FLIGHT_KEY})`);
    return `upstream requests dropped unanswered: ${parts.join(', ')}`;
  }
}
