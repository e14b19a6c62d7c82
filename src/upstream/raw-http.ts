/**
 * A lean HTTP/1.1 client for the direct path's POSTs to a plain `http:` upstream. node:http's
 * client costs a proxied call ~50-70 µs of CPU (a ClientRequest and an IncomingMessage with their
 * streams, the agent's bookkeeping, header validation); this writes a precomputed head and the
 * body on a keep-alive socket of its own pool and parses the answer (Content-Length, chunked or
 * close-delimited bodies, 1xx heads skipped) straight into the call.
 *
 * Pipelining (`depth` > 1): the requests posted in one turn of the event loop are written
 * together, up to `depth` on one idle socket in one write, once the upstream has shown it keeps
 * HTTP/1.1 connections alive; their answers come back in order. On loopback a socket write is
 * a third of a proxied call's CPU, so 50 calls in flight cost a few writes instead of 50. A
 * request is never added to a socket that is already waiting for answers, so a slow call holds
 * up at most the calls written with it in the same turn. HTTPS upstreams and the GET that
 * resumes an event stream keep node:http.
 */
import { connect, type Socket } from 'node:net';
import { RawRequest, type RawExchange } from './raw-request.js';

export { RawRequest, type RawExchange } from './raw-request.js';

/** Idle keep-alive sockets kept per upstream (node:http's Agent keeps 256). */
const MAX_IDLE = 256;
/**
 * Requests written together on one socket by default (`plugin_limits.upstream_pipeline`). 16, not
 * 8: under 50 calls in flight a turn brings ~10 calls, which 8 split over two sockets, each a
 * write here and a read and a worker message on the upstream; 16 cut both hubs' CPU a proxied
 * call by 13-19 % (docs/performance.md, "Proxy hop, session 14"). A turn bringing 8 or fewer is
 * written as before.
 */
export const DEFAULT_PIPELINE_DEPTH = 16;

const LINE = Symbol('moonhub raw line');

/** A pooled socket and the requests written on it, oldest first, not yet answered. */
export class RawLine {
  readonly queue: RawRequest[] = [];
  /** Some answer byte arrived since the last write (requests behind it may have been processed). */
  heard = false;
  /** The socket carried an earlier request (a keep-alive race may have closed it). */
  reused = false;

  constructor(
    readonly pool: RawHttpPool,
    readonly socket: Socket,
  ) {}

  /**
   * Writes `reqs` (one write) and waits for their answers in order. They are copied into one
   * buffer part by part: joined into one string first, the whole string was copied again in the
   * JS heap (flattened) before its encoding, ~0.7 KB a call.
   */
  send(reqs: RawRequest[], reused: boolean): void {
    this.reused = reused;
    this.heard = false;
    let size = 0;
    for (const r of reqs) size += r.head.length + r.tail.length + r.contentBytes;
    const buf = Buffer.allocUnsafe(size);
    let at = 0;
    for (const r of reqs) {
      r.line = this;
      this.queue.push(r);
      at += buf.write(r.head, at, 'latin1');
      at += buf.write(r.tail, at, 'latin1');
      at += buf.write(r.content, at, 'utf8');
      r.head = r.tail = r.content = '';
    }
    // The lengths were counted as the writes count them; never send bytes no part filled.
    this.socket.write(at === size ? buf : buf.subarray(0, at));
  }

  onData(chunk: Buffer): void {
    this.heard = true;
    let buf = chunk;
    while (buf.length > 0) {
      const req = this.queue[0];
      // Bytes no request asked for: the socket cannot be trusted again.
      if (req === undefined)
        return this.kill(new Error('bad answer from the upstream: bytes nobody asked for'));
      buf = req.feed(buf);
      if (this.socket.destroyed) return;
    }
  }

  /** The head request's answer is complete; `keep`: the upstream keeps the connection open. */
  answered(keep: boolean, announcedClose: boolean): void {
    this.queue.shift();
    if (!keep) {
      // RFC 9112 §9.6: a server that announced `close` processes nothing after that answer, so
      // the requests behind it may go again; otherwise whether they ran is unknown: they fail.
      return this.kill(undefined, announcedClose);
    }
    if (this.queue.length === 0) return this.pool.release(this);
    if (this.queue.every(abandoned)) this.socket.destroy();
  }

  /** A request given up by its caller: its socket closes unless live requests still share it. */
  abandon(): void {
    if (this.queue.every(abandoned)) this.socket.destroy();
  }

  onClose(err: Error | undefined): void {
    const head = this.queue[0];
    // A close-delimited body ends here.
    if (head !== undefined && err === undefined && head.endsAtClose()) return;
    this.kill(err);
  }

  /**
   * The socket is done: every request still waiting fails (`retry`: certainly not processed, or
   * the keep-alive race of a reused socket where no answer byte came since the write).
   */
  kill(err: Error | undefined, retry = false): void {
    const waiting = this.queue.splice(0);
    this.socket.destroy();
    for (const r of waiting) {
      const e = err ?? Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });
      r.lost(e, retry || (this.reused && !this.heard));
    }
  }
}

function abandoned(r: RawRequest): boolean {
  return r.abandoned;
}

/** Keep-alive sockets to one upstream (host and port). */
export class RawHttpPool {
  private readonly idle: RawLine[] = [];
  private pending: RawRequest[] = [];
  private scheduled = false;
  /** The upstream answered once over HTTP/1.1 keeping the connection: pipelining may start. */
  private persistent = false;

  /** `depth`: most requests written together on one socket (1: one request per socket). */
  constructor(
    private readonly host: string,
    private readonly port: number,
    private readonly depth = DEFAULT_PIPELINE_DEPTH,
  ) {}

  /** Sends `head` + `body`; the exchange hears the answer. */
  post(head: string, body: string, x: RawExchange): RawRequest {
    return this.postParts(head, '', body, Buffer.byteLength(body), x);
  }

  /**
   * Sends `head` + `tail` + `body` (`head` and `tail` ASCII, `bodyBytes` the body's UTF-8
   * length); the exchange hears the answer.
   */
  postParts(
    head: string,
    tail: string,
    body: string,
    bodyBytes: number,
    x: RawExchange,
  ): RawRequest {
    const req = new RawRequest(this, head, tail, body, bodyBytes, x);
    if (this.depth <= 1 || !this.persistent) {
      this.write([req]);
      return req;
    }
    this.pending.push(req);
    if (!this.scheduled) {
      this.scheduled = true;
      // After the poll phase: every request the ready sockets brought in this turn is queued.
      setImmediate(flushPool, this);
    }
    return req;
  }

  flush(): void {
    this.scheduled = false;
    const all = this.pending;
    if (all.length === 0) return;
    this.pending = [];
    const lines = Math.ceil(all.length / this.depth);
    const size = Math.ceil(all.length / lines);
    for (let i = 0; i < all.length; i += size) this.write(all.slice(i, i + size));
  }

  private write(reqs: RawRequest[]): void {
    let line = this.idle.pop();
    while (line !== undefined && (line.socket.destroyed || !line.socket.writable))
      line = this.idle.pop();
    // An idle socket does not keep the process alive (as node:http's Agent does it).
    if (line !== undefined) line.socket.ref();
    if (line === undefined) this.open().send(reqs, false);
    else line.send(reqs, true);
  }

  /** A request not written yet, given up: it is simply not sent. */
  unqueue(req: RawRequest): boolean {
    const i = this.pending.indexOf(req);
    if (i < 0) return false;
    this.pending.splice(i, 1);
    return true;
  }

  /** An answer showed the upstream keeps HTTP/1.1 connections open. */
  keptAlive(): void {
    this.persistent = true;
  }

  private open(): RawLine {
    const socket = connect({
      host: this.host,
      port: this.port,
      noDelay: true,
      keepAlive: true,
      keepAliveInitialDelay: 1000,
    }) as Socket & { [LINE]?: RawLine };
    const line = new RawLine(this, socket);
    socket[LINE] = line;
    socket.on('data', onSocketData);
    socket.on('error', onSocketError);
    socket.on('close', onSocketClose);
    return line;
  }

  /** A socket with no request left: kept for the next requests, or closed. */
  release(line: RawLine): void {
    if (this.idle.length < MAX_IDLE && !line.socket.destroyed) {
      line.socket.unref();
      this.idle.push(line);
    } else line.socket.destroy();
  }

  /** A socket that closed. */
  forget(line: RawLine): void {
    const i = this.idle.indexOf(line);
    if (i >= 0) this.idle.splice(i, 1);
  }

  /** Closes every idle socket (the upstream connection closes). */
  close(): void {
    for (const l of this.idle.splice(0)) l.socket.destroy();
  }
}

function flushPool(pool: RawHttpPool): void {
  pool.flush();
}

type LineSocket = Socket & { [LINE]: RawLine };

function onSocketData(this: LineSocket, chunk: Buffer): void {
  this[LINE].onData(chunk);
}

function onSocketError(this: LineSocket, err: Error): void {
  this[LINE].onClose(err);
}

function onSocketClose(this: LineSocket): void {
  const line = this[LINE];
  line.onClose(undefined);
  line.pool.forget(line);
}
