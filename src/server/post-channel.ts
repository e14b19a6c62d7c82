/**
 * The response channel of a POSTed request: its answer goes back on the POST's response, as JSON,
 * or as an event stream once the call sends the client something while it runs (progress, logs,
 * 2025 server requests). 2025-11-25 sessions get resumable streams (SEP-1699).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { localError, wireError } from '../errors.js';
import { RequestChannel } from './channel.js';
import type { FlowLimits } from './flow-limits.js';
import type { JsonRpcId } from './jsonrpc.js';
import { DEFAULT_RETRY_MS, ResumableStreams, type ResumableStream } from './resumable.js';
import type { SessionRecord } from './session.js';

/** The first revision whose clients understand priming events and resumption (SEP-1699). */
const RESUMABLE_VERSION = '2025-11-25';

const CHANNEL = Symbol('moonhub.post-channel');
type ChannelResponse = ServerResponse & { [CHANNEL]?: PostResponseChannel };

function onResponseClose(this: ChannelResponse): void {
  this[CHANNEL]?.responseClosed();
}

/**
 * The channel of one POSTed request: the POST's own response. Its abort source is made lazily: the AbortController
 * exists only once a handler reads `ctx.signal`, the response's 'close' listener once a handler
 * reads it or `watch`es the abort (a proxied call); the response closing before it finished means the caller went away. A message
 * sent while the call runs turns the response into an event stream, when the client accepts one.
 */
export class PostResponseChannel extends RequestChannel {
  /** The response became an event stream: the answer goes out as its last event. */
  streaming = false;
  /** 2025-11-25 sessions: the stream's events are kept so the client can resume it. */
  private resumable: ResumableStream | undefined;

  constructor(
    private readonly res: ServerResponse,
    private readonly req: IncomingMessage,
    private readonly session: SessionRecord | undefined,
    /** Bounds the stream's buffer for a client that does not read (limits.streams). */
    private readonly flow: FlowLimits,
    /** Batch members share one response and cannot stream. */
    private readonly canStream = true,
    /** The request's id: a resumption elsewhere answers it if this process dies (cluster). */
    private readonly requestId?: JsonRpcId,
  ) {
    super();
  }

  protected override armed(): void {
    const res = this.res;
    if (res.closed) {
      // Read late (a handler may first look at its signal mid-call): a resumable stream still
      // outlives its connection.
      if (!res.writableFinished && this.resumable === undefined)
        this.abort(localError('client_disconnected'));
      return;
    }
    // One shared listener, the channel on the response: no closure and `once` wrapper per call.
    (res as ChannelResponse)[CHANNEL] = this;
    res.on('close', onResponseClose);
  }

  /** The response closed (its connection went, or it was answered). */
  responseClosed(): void {
    // A resumable stream outlives its connection: the client may come back for the answer.
    if (!this.res.writableFinished && this.resumable === undefined)
      this.abort(localError('client_disconnected'));
  }

  private upgrade(): boolean {
    const res = this.res;
    if (!this.canStream || res.writableEnded || res.destroyed) return false;
    if (!(this.req.headers.accept ?? '').includes('text/event-stream')) return false;
    const session = this.session;
    res.writeHead(200, {
      'Content-Type': 'text/event-stream',
      'Cache-Control': 'no-cache, no-transform',
      'X-Accel-Buffering': 'no',
      ...(session === undefined ? {} : { 'Mcp-Session-Id': session.id }),
    });
    this.streaming = true;
    // Priming events (empty data) confuse clients of older revisions, so only 2025-11-25 on.
    if (session !== undefined && session.protocolVersion >= RESUMABLE_VERSION) {
      const streams = (session.resumable ??= new ResumableStreams(
        session.streamMirror,
        this.flow.parked,
        session.principal,
      ));
      const stream = streams.open(res, this.flow.streamBufferBytes, this.requestId);
      this.resumable = stream;
      // Forgotten for a bound while no client was connected: nobody can fetch the answer.
      stream.onLost = (limit) => this.abort(localError('stream_forgotten', { limit }));
      stream.prime(DEFAULT_RETRY_MS);
      res.once('close', () => stream.dropped());
    }
    return true;
  }

  override send(json: string): boolean {
    if (!this.streaming) {
      if (!this.upgrade()) return false;
    } else if (this.resumable === undefined && (this.res.writableEnded || this.res.destroyed)) {
      return false;
    }
    const waiting =
      this.resumable === undefined ? this.res.writableLength : this.resumable.waitingBytes;
    if (waiting > this.flow.streamBufferBytes) {
      this.overflow();
      return false;
    }
    if (this.resumable !== undefined) this.resumable.send(json);
    else this.res.write('event: message\ndata: ' + json + '\n\n');
    return true;
  }

  /**
   * The client does not read: the call feeding the stream is aborted (its handler's signal
   * fires, so a script sending notices in a loop stops) and the connection is dropped, which
   * frees what waited for it at once.
   */
  private overflow(): void {
    const max = this.flow.streamBufferBytes;
    this.flow.refused?.('stream_buffer');
    this.cutOff = wireError('stream_overflow', { max });
    this.abort(this.cutOff);
    if (this.resumable !== undefined) this.resumable.cutOff();
    else this.res.destroy();
  }

  override pollLater(retryMs: number): boolean {
    if (!this.streaming && !this.upgrade()) return false;
    if (this.resumable === undefined) return false;
    this.resumable.detach(retryMs);
    return true;
  }

  override lastOnConnection(): void {
    if (!this.res.headersSent) this.res.setHeader('Connection', 'close');
  }

  /** Ends the stream with the answer (or keeps it for the client to resume). */
  finish(json: string): void {
    if (this.resumable !== undefined) this.resumable.finish(json);
    else this.res.end('event: message\ndata: ' + json + '\n\n');
  }
}
