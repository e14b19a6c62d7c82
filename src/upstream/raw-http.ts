/**
 * A lean HTTP/1.1 client for the direct path's POSTs to a plain `http:` upstream. node:http's
 * client costs a proxied call ~50-70 µs of CPU (a ClientRequest and an IncomingMessage with their
 * streams, the agent's bookkeeping, header validation); this writes a precomputed head and the
 * body in one write on a keep-alive socket of its own pool and parses the answer (Content-Length,
 * chunked or close-delimited bodies, 1xx heads skipped) straight into the call. One request per
 * socket at a time (no pipelining: a slow call never holds up another). HTTPS upstreams and the
 * GET that resumes an event stream keep node:http.
 */
import { connect, type Socket } from 'node:net';

/** What a request tells its caller (DirectCall implements it). */
export interface RawExchange {
  /** The answer's head; the caller may `destroy()` the request from here. */
  onHead(status: number, statusText: string, type: string, length: number | undefined): void;
  onBody(chunk: Buffer): void;
  /** The body is complete (the socket went back to the pool). */
  onEnd(): void;
  /**
   * The socket failed or closed before the answer was complete; `answered` says whether a head
   * had arrived, `reused` whether the socket had carried an earlier request.
   */
  onFail(err: Error, answered: boolean, reused: boolean): void;
}

/** Longest answer head read (node:http's default is 16 KiB). */
const MAX_HEAD = 64 * 1024;
/** Idle keep-alive sockets kept per upstream (node:http's Agent keeps 256). */
const MAX_IDLE = 256;

const CRLFCRLF = Buffer.from('\r\n\r\n');
const REQ = Symbol('moonhub raw request');
type PoolSocket = Socket & { [REQ]?: RawRequest | undefined };

type Body = 'length' | 'chunked' | 'close';

/** Keep-alive sockets to one upstream (host and port). */
export class RawHttpPool {
  private readonly idle: PoolSocket[] = [];

  constructor(
    private readonly host: string,
    private readonly port: number,
  ) {}

  /** Sends `head` + `body` (one write); the exchange hears the answer. */
  post(head: string, body: string, x: RawExchange): RawRequest {
    let socket = this.idle.pop();
    while (socket !== undefined && (socket.destroyed || !socket.writable)) socket = this.idle.pop();
    const reused = socket !== undefined;
    // An idle socket does not keep the process alive (as node:http's Agent does it).
    if (reused) socket!.ref();
    socket ??= this.open();
    const req = new RawRequest(this, socket, x, reused);
    socket[REQ] = req;
    socket.write(head + body);
    return req;
  }

  private open(): PoolSocket {
    const socket = connect({
      host: this.host,
      port: this.port,
      noDelay: true,
      keepAlive: true,
      keepAliveInitialDelay: 1000,
    }) as PoolSocket;
    socket.on('data', onSocketData);
    socket.on('error', onSocketError);
    socket.on('close', onSocketClose);
    poolOf.set(socket, this);
    return socket;
  }

  /** A socket whose answer is complete: kept for the next request, or closed. */
  release(socket: PoolSocket, keep: boolean): void {
    socket[REQ] = undefined;
    if (keep && this.idle.length < MAX_IDLE && !socket.destroyed) {
      socket.unref();
      this.idle.push(socket);
    } else socket.destroy();
  }

  /** A socket that closed (idle, or under a request that already let go of it). */
  forget(socket: PoolSocket): void {
    const i = this.idle.indexOf(socket);
    if (i >= 0) this.idle.splice(i, 1);
  }

  /** Closes every idle socket (the upstream connection closes). */
  close(): void {
    for (const s of this.idle.splice(0)) s.destroy();
  }
}

function onSocketData(this: PoolSocket, chunk: Buffer): void {
  const req = this[REQ];
  // Bytes on an idle socket answer nothing we asked: the socket cannot be trusted again.
  if (req === undefined) this.destroy();
  else req.onData(chunk);
}

function onSocketError(this: PoolSocket, err: Error): void {
  this[REQ]?.onClose(err);
}

function onSocketClose(this: PoolSocket): void {
  const req = this[REQ];
  if (req !== undefined) req.onClose(undefined);
  else poolOf.get(this)?.forget(this);
}

/** The pool of each socket, so an idle one that closes leaves it. */
const poolOf = new WeakMap<Socket, RawHttpPool>();

/** One request on a pooled socket, and the parse of its answer. */
export class RawRequest {
  private done = false;
  private answered = false;
  /** Bytes of an unfinished head, or of an unfinished chunk-size line or trailer. */
  private pending: Buffer | undefined;
  private body: Body = 'length';
  /** Bytes left of the body (length) or of the current chunk (chunked). */
  private left = 0;
  /** Chunked: 'size' line, 'data', the CRLF after data, 'trailer' lines. */
  private chunkState: 'size' | 'data' | 'crlf' | 'trailer' = 'size';
  private keep = true;

  constructor(
    private readonly pool: RawHttpPool,
    private readonly socket: PoolSocket,
    private readonly x: RawExchange,
    readonly reused: boolean,
  ) {}

  /** Stops: the socket closes (that is how a 2026-07-28 call is cancelled), no callback follows. */
  destroy(): void {
    if (this.done) return;
    this.done = true;
    this.socket[REQ] = undefined;
    this.socket.destroy();
  }

  onClose(err: Error | undefined): void {
    if (this.done) return;
    if (this.answered && this.body === 'close' && err === undefined) return this.complete();
    this.done = true;
    this.socket[REQ] = undefined;
    this.socket.destroy();
    const e = err ?? Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });
    this.x.onFail(e, this.answered, this.reused);
  }

  onData(chunk: Buffer): void {
    let buf = chunk;
    while (!this.done && buf.length > 0) {
      if (!this.answered) {
        const rest = this.readHead(buf);
        if (rest === undefined) return;
        buf = rest;
        continue;
      }
      buf = this.body === 'chunked' ? this.readChunked(buf) : this.readPlain(buf);
    }
  }

  /** The rest of `buf` after a complete head, or undefined while the head is incomplete. */
  private readHead(buf: Buffer): Buffer | undefined {
    const all = this.pending === undefined ? buf : Buffer.concat([this.pending, buf]);
    const end = all.indexOf(CRLFCRLF);
    if (end < 0) {
      if (all.length > MAX_HEAD) this.broken('the answer head is too long');
      else this.pending = all;
      return undefined;
    }
    this.pending = undefined;
    const lines = all.toString('latin1', 0, end).split('\r\n');
    const m = /^HTTP\/1\.([01]) (\d{3})(?: (.*))?$/.exec(lines[0]!);
    if (m === null) {
      this.broken('not an HTTP/1.x answer');
      return undefined;
    }
    const status = Number(m[2]);
    const rest = all.subarray(end + 4);
    // 1xx (100 Continue, 103 Early Hints): informational, the answer follows.
    if (status < 200) return rest;
    let type = '';
    let length: number | undefined;
    let chunked = false;
    this.keep = m[1] === '1';
    for (let i = 1; i < lines.length; i++) {
      const line = lines[i]!;
      const colon = line.indexOf(':');
      if (colon <= 0) continue;
      const name = line.slice(0, colon).trim().toLowerCase();
      const value = line.slice(colon + 1).trim();
      if (name === 'content-type') type = value;
      else if (name === 'content-length') length = /^\d+$/.test(value) ? Number(value) : NaN;
      else if (name === 'transfer-encoding') chunked = /(^|,)\s*chunked\s*$/i.test(value);
      else if (name === 'connection') {
        const v = value.toLowerCase();
        if (v.includes('close')) this.keep = false;
        else if (v.includes('keep-alive') && m[1] === '0') this.keep = true;
      }
    }
    if (length !== undefined && Number.isNaN(length)) {
      this.broken('a bad Content-Length');
      return undefined;
    }
    this.answered = true;
    if (status === 204 || status === 304) {
      this.body = 'length';
      length = 0;
    } else if (chunked) this.body = 'chunked';
    else if (length !== undefined) this.body = 'length';
    else {
      this.body = 'close';
      this.keep = false;
    }
    this.left = length ?? 0;
    this.x.onHead(status, m[3] ?? '', type, chunked ? undefined : length);
    if (!this.done && this.body === 'length' && this.left === 0) this.complete(rest.length > 0);
    return rest;
  }

  private readPlain(buf: Buffer): Buffer {
    if (this.body === 'close') {
      this.x.onBody(buf);
      return EMPTY;
    }
    const take = Math.min(this.left, buf.length);
    this.left -= take;
    this.x.onBody(take === buf.length ? buf : buf.subarray(0, take));
    if (this.done) return EMPTY;
    if (this.left === 0) {
      // Bytes past the answer: the upstream pipelined something we never asked for.
      if (take < buf.length) this.keep = false;
      this.complete();
    }
    return EMPTY;
  }

  private readChunked(buf: Buffer): Buffer {
    if (this.chunkState === 'data') {
      const take = Math.min(this.left, buf.length);
      this.left -= take;
      this.x.onBody(take === buf.length ? buf : buf.subarray(0, take));
      if (this.left === 0) this.chunkState = 'crlf';
      return buf.subarray(take);
    }
    // A line: the chunk size, the CRLF after its data, or a trailer line.
    const all = this.pending === undefined ? buf : Buffer.concat([this.pending, buf]);
    const nl = all.indexOf(10);
    if (nl < 0) {
      if (all.length > MAX_HEAD) this.broken('a chunk line is too long');
      else this.pending = all;
      return EMPTY;
    }
    this.pending = undefined;
    const line = all.toString('latin1', 0, nl).replace(/\r$/, '');
    const rest = all.subarray(nl + 1);
    if (this.chunkState === 'crlf') {
      if (line !== '') this.broken('a chunk without its CRLF');
      this.chunkState = 'size';
    } else if (this.chunkState === 'trailer') {
      if (line === '') this.complete(rest.length > 0);
    } else {
      const size = /^([0-9a-fA-F]{1,8})\s*(;.*)?$/.exec(line);
      if (size === null) this.broken('a bad chunk size');
      else if ((this.left = parseInt(size[1]!, 16)) === 0) this.chunkState = 'trailer';
      else this.chunkState = 'data';
    }
    return this.done ? EMPTY : rest;
  }

  private complete(extra = false): void {
    this.done = true;
    this.pool.release(this.socket, this.keep && !extra);
    this.x.onEnd();
  }

  private broken(why: string): void {
    if (this.done) return;
    this.done = true;
    this.socket[REQ] = undefined;
    this.socket.destroy();
    this.x.onFail(new Error(`bad answer from the upstream: ${why}`), true, this.reused);
  }
}

const EMPTY = Buffer.alloc(0);
