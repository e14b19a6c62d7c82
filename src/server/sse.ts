/**
 * Server-sent-event streams over a node:http response: framing, a slow-reader guard, and one
 * shared keep-alive timer for all open streams (not a timer per stream).
 */
import type { ServerResponse } from 'node:http';
import { DEFAULT_STREAM_BUFFER_BYTES, type FlowLimits } from './flow-limits.js';

export class SseStream {
  private readonly res: ServerResponse;
  private onClose: (() => void) | undefined;
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
    if (this.closed) return;
    if (this.res.writableLength > (this.flow?.streamBufferBytes ?? DEFAULT_STREAM_BUFFER_BYTES)) {
      this.cutOff();
      return;
    }
    this.res.write('event: message\ndata: ' + json + '\n\n');
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
