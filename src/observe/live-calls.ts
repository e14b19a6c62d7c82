/**
 * Recent calls for the dashboard: a bounded ring of the last calls and of the last failures, and
 * an event stream (SSE) that tells each connected viewer when a call starts and ends. Nothing of
 * a call's arguments or results is kept, only who called what and how it went.
 */
import type { ServerResponse } from 'node:http';
import type { CallEnd, CallObserver, CallStart } from './call-observer.js';

export interface LiveCall {
  id: number;
  /** ISO 8601 (Date.now() while kept, turned into text when shown). */
  time: string | number;
  transport: string;
  method: string;
  name: string | null;
  principal: string | null;
  agent: string | null;
  state: 'running' | 'ok' | 'tool_error' | 'error';
  duration_ms?: number;
  error?: string;
}

export interface LiveCallsOptions {
  /** Calls kept for a viewer that connects later (default 200). */
  keep?: number;
  /** Failures kept (default 50). */
  keepErrors?: number;
  /** Viewers streaming at once; more are refused with 503 (default 8). */
  maxViewers?: number;
  identityOf?: (principal: string) => { agent?: string };
  /**
   * Bytes a viewer that does not read may have waiting (limits.streams.buffer_bytes, default
   * 4 MiB); past it the viewer's connection is destroyed, as for the MCP event streams.
   */
  bufferBytes?: number;
}

/**
 * Characters of a call's name kept for the page. The front door bounds names (limits.name_length,
 * limits.subscriptions.uri_length), but an `execute` script's inner calls reach this observer
 * without passing it: a ring of 250 calls must not hold 250 names of megabytes.
 */
export const SHOWN_NAME_MAX = 1024;

function shortName(name: string | undefined): string | null {
  if (name === undefined) return null;
  return name.length > SHOWN_NAME_MAX ? name.slice(0, SHOWN_NAME_MAX) + '…' : name;
}

function shown(call: LiveCall): LiveCall {
  return typeof call.time === 'number'
    ? { ...call, time: new Date(call.time).toISOString() }
    : call;
}

export const LIVE_DEFAULTS = {
  keep: 200,
  keepErrors: 50,
  maxViewers: 8,
  bufferBytes: 4 * 1024 * 1024,
};

export class LiveCalls {
  private readonly calls: LiveCall[] = [];
  private readonly errors: LiveCall[] = [];
  private callsAt = 0;
  private errorsAt = 0;
  /** Each viewer, with the check its credentials still pass (none: always). */
  private readonly viewers = new Map<ServerResponse, (() => boolean) | undefined>();
  private nextId = 1;
  private readonly keep: number;
  private readonly keepErrors: number;
  readonly maxViewers: number;
  private readonly bufferBytes: number;
  private readonly heartbeat: NodeJS.Timeout;

  constructor(private readonly opts: LiveCallsOptions = {}) {
    this.keep = opts.keep ?? LIVE_DEFAULTS.keep;
    this.keepErrors = opts.keepErrors ?? LIVE_DEFAULTS.keepErrors;
    this.maxViewers = opts.maxViewers ?? LIVE_DEFAULTS.maxViewers;
    this.bufferBytes = opts.bufferBytes ?? LIVE_DEFAULTS.bufferBytes;
    // Proxies drop a silent stream; a comment line every 15 s keeps it open.
    this.heartbeat = setInterval(() => {
      for (const v of this.viewers.keys()) this.send(v, ': keep-alive\n\n');
    }, 15_000);
    this.heartbeat.unref();
  }

  readonly observer: CallObserver = {
    start: (call: CallStart) => {
      const identity =
        call.principal === undefined ? undefined : this.opts.identityOf?.(call.principal);
      const live: LiveCall = {
        id: this.nextId++,
        time: call.startedAt,
        transport: call.transport,
        method: call.method,
        name: shortName(call.name),
        principal: call.principal ?? null,
        agent: identity?.agent ?? null,
        state: 'running',
      };
      this.push(this.calls, live, this.keep);
      if (this.viewers.size > 0) this.broadcast('call', live);
      return (end: CallEnd) => {
        live.state = end.outcome;
        live.duration_ms = Math.round(end.durationMs * 100) / 100;
        if (end.errorMessage !== undefined) live.error = end.errorMessage;
        if (end.outcome !== 'ok') this.push(this.errors, live, this.keepErrors);
        if (this.viewers.size > 0) this.broadcast('call', live);
      };
    },
  };

  /** A ring: past its size the oldest slot is overwritten (no array shifting per call). */
  private push(ring: LiveCall[], call: LiveCall, max: number): void {
    if (ring.length < max) ring.push(call);
    else {
      const at = ring === this.calls ? this.callsAt : this.errorsAt;
      ring[at] = call;
      if (ring === this.calls) this.callsAt = (at + 1) % max;
      else this.errorsAt = (at + 1) % max;
    }
  }

  private broadcast(event: string, call: LiveCall): void {
    const frame = `event: ${event}\ndata: ${JSON.stringify(shown(call))}\n\n`;
    for (const v of this.viewers.keys()) this.send(v, frame);
  }

  /**
   * One frame to one viewer. A viewer that stopped reading (a suspended laptop, a stalled
   * proxy) is dropped once its backlog passes the bound: every call of every agent is a frame,
   * so without it the hub held all of them for that one socket.
   */
  private send(v: ServerResponse, frame: string): void {
    if (v.writableLength > this.bufferBytes) {
      this.viewers.delete(v);
      v.destroy();
      return;
    }
    v.write(frame);
  }

  /** Oldest first. */
  recent(): { calls: LiveCall[]; errors: LiveCall[] } {
    const ordered = (ring: LiveCall[], at: number) =>
      [...ring.slice(at), ...ring.slice(0, at)].map(shown);
    return {
      calls: ordered(this.calls, this.callsAt),
      errors: ordered(this.errors, this.errorsAt),
    };
  }

  /**
   * Serves one viewer's stream; false (nothing written) when the viewers are at their bound.
   * `allowed`: whether the viewer's credentials still hold (recheck() asks it).
   */
  stream(res: ServerResponse, allowed?: () => boolean): boolean {
    if (this.viewers.size >= this.maxViewers) return false;
    res.writeHead(200, {
      'Content-Type': 'text/event-stream',
      'Cache-Control': 'no-store',
      'X-Accel-Buffering': 'no',
    });
    res.write(': moonhub live calls\n\n');
    this.viewers.set(res, allowed);
    res.once('close', () => this.viewers.delete(res));
    return true;
  }

  /**
   * Cuts the streams whose viewer's credentials no longer hold (the sessions changed: an admin
   * token revoked). Checked once, at connect, a revoked token's stream went on showing every
   * call of every agent for as long as it stayed open.
   */
  recheck(): number {
    let cut = 0;
    for (const [v, allowed] of this.viewers) {
      if (allowed === undefined || allowed()) continue;
      this.viewers.delete(v);
      v.destroy();
      cut++;
    }
    return cut;
  }

  close(): void {
    clearInterval(this.heartbeat);
    for (const v of this.viewers.keys()) v.end();
    this.viewers.clear();
  }
}
