/**
 * Server-sent-event streams over a node:http response: framing, a slow-reader guard, and one
 * shared keep-alive timer for all open streams (not a timer per stream).
 */
import type { ServerResponse } from 'node:http';
import { DEFAULT_STREAM_BUFFER_BYTES, type FlowLimits } from './flow-limits.js';

export class SseStream {
  private readonly res: ServerResponse;
  private onClose: (() => void) | undefined;
  /** Notes written and not yet flushed, by key: the newest one asked for meanwhile, if any. */
  private notes: Map<string, string | undefined> | undefined;
  closed = false;

  constructor(
    res: ServerResponse,
    headers: Record<string, string> = {},
    onClose?: () => void,
    /** A reader this far behind is cut off rather than buffered without bound (limits.streams). */
    private readonly flow?: FlowLimits,
  ) {
    this.res = res;
    this.onClose = onClose;
    res.writeHead(200, {
      'Content-Type': 'text/event-stream',
      'Cache-Control': 'no-cache, no-transform',
      Connection: 'keep-alive',
      'X-Accel-Buffering': 'no',
      ...headers,
    });
    res.flushHeaders();
    // 'close' fires when the client goes away as well as after end(): one place to clean up.
    res.once('close', () => this.finish());
    keepAlive.add(this);
  }

  /** Sends one JSON-RPC message (already serialised) as a `message` event. */
  send(json: string): void {
    if (!this.writable()) return;
    this.res.write('event: message\ndata: ' + json + '\n\n');
  }

  /**
   * Sends a notification that only says "`key` changed" (a list_changed): while one of the same
   * key is written and not yet taken by the socket, another would tell the client nothing new,
   * so it is sent once that one is, and only once however many came meanwhile. A client that
   * stops reading thus has at most one such event per key waiting, not one per change.
   */
  note(key: string, json: string): void {
    const waiting = (this.notes ??= new Map());
    if (waiting.has(key)) {
      waiting.set(key, json);
      return;
    }
    if (!this.writable()) return;
    waiting.set(key, undefined);
    this.res.write('event: message\ndata: ' + json + '\n\n', (err) => {
      const again = waiting.get(key);
      waiting.delete(key);
      if (err == null && again !== undefined) this.note(key, again);
    });
  }

  /** Whether a write may go out now; a reader too far behind is cut off here. */
  private writable(): boolean {
    // A response the client already dropped: a write would only make an error to throw away.
    if (this.closed || this.res.destroyed || this.res.writableEnded) return false;
    if (this.res.writableLength > (this.flow?.streamBufferBytes ?? DEFAULT_STREAM_BUFFER_BYTES)) {
      this.cutOff();
      return false;
    }
    return true;
  }

  ping(): void {
    if (this.closed) return;
    // Nothing is read: a keep-alive would only add to what waits.
    if (this.res.writableLength > 0) return;
    this.res.write(': keepalive\n\n');
  }

  /**
   * Drops a client that does not read: destroying (not ending) the response frees what waits
   * for it at once; an end would keep it until the socket times out.
   */
  private cutOff(): void {
    this.flow?.refused?.('stream_buffer');
    this.res.destroy();
    this.finish();
  }

  end(): void {
    if (this.closed) return;
    this.res.end();
    this.finish();
  }

  private finish(): void {
    if (this.closed && this.onClose === undefined) return;
    this.closed = true;
    keepAlive.delete(this);
    const cb = this.onClose;
    this.onClose = undefined;
    cb?.();
  }
}

/** One interval pings every open stream so idle proxies and clients keep the connection. */
class KeepAlive {
  private readonly streams = new Set<SseStream>();
  private timer: NodeJS.Timeout | undefined;
  intervalMs = 25_000;

  add(s: SseStream): void {
    this.streams.add(s);
    if (!this.timer) {
      this.timer = setInterval(() => {
        for (const stream of this.streams) stream.ping();
      }, this.intervalMs);
      this.timer.unref();
    }
  }

  delete(s: SseStream): void {
    this.streams.delete(s);
    if (this.streams.size === 0 && this.timer) {
      clearInterval(this.timer);
      this.timer = undefined;
    }
  }
}

const keepAlive = new KeepAlive();

/** Sets the keep-alive period of every SSE stream in this process (tests shorten it). */
export function setSseKeepAliveInterval(ms: number): void {
  keepAlive.intervalMs = ms;
}
