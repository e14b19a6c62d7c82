/**
 * Recent calls for the dashboard: a bounded ring of the last calls and of the last failures, and
 * an event stream (SSE) that tells each connected viewer when a call starts and ends. Nothing of
 * a call's arguments or results is kept, only who called what and how it went.
 */
import type { ServerResponse } from 'node:http';
import type { CallEnd, CallObserver, CallStart } from './call-observer.js';

export interface LiveCall {
  id: number;
  time: string;
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
}

export const LIVE_DEFAULTS = { keep: 200, keepErrors: 50, maxViewers: 8 };

export class LiveCalls {
  private readonly calls: LiveCall[] = [];
  private readonly errors: LiveCall[] = [];
  private readonly viewers = new Set<ServerResponse>();
  private nextId = 1;
  private readonly keep: number;
  private readonly keepErrors: number;
  readonly maxViewers: number;
  private readonly heartbeat: NodeJS.Timeout;

  constructor(private readonly opts: LiveCallsOptions = {}) {
    this.keep = opts.keep ?? LIVE_DEFAULTS.keep;
    this.keepErrors = opts.keepErrors ?? LIVE_DEFAULTS.keepErrors;
    this.maxViewers = opts.maxViewers ?? LIVE_DEFAULTS.maxViewers;
    // Proxies drop a silent stream; a comment line every 15 s keeps it open.
    this.heartbeat = setInterval(() => {
      for (const v of this.viewers) v.write(': keep-alive\n\n');
    }, 15_000);
    this.heartbeat.unref();
  }

  readonly observer: CallObserver = {
    start: (call: CallStart) => {
      const identity =
        call.principal === undefined ? undefined : this.opts.identityOf?.(call.principal);
      const live: LiveCall = {
        id: this.nextId++,
        time: new Date(call.startedAt).toISOString(),
        transport: call.transport,
        method: call.method,
        name: call.name ?? null,
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

  private push(ring: LiveCall[], call: LiveCall, max: number): void {
    ring.push(call);
    if (ring.length > max) ring.splice(0, ring.length - max);
  }

  private broadcast(event: string, data: unknown): void {
    const frame = `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
    for (const v of this.viewers) v.write(frame);
  }

  recent(): { calls: LiveCall[]; errors: LiveCall[] } {
    return { calls: [...this.calls], errors: [...this.errors] };
  }

  /** Serves one viewer's stream; false (nothing written) when the viewers are at their bound. */
  stream(res: ServerResponse): boolean {
    if (this.viewers.size >= this.maxViewers) return false;
    res.writeHead(200, {
      'Content-Type': 'text/event-stream',
      'Cache-Control': 'no-store',
      'X-Accel-Buffering': 'no',
    });
    res.write(': moonhub live calls\n\n');
    this.viewers.add(res);
    res.once('close', () => this.viewers.delete(res));
    return true;
  }

  close(): void {
    clearInterval(this.heartbeat);
    for (const v of this.viewers) v.end();
    this.viewers.clear();
  }
}
