/**
 * One request of the lean HTTP/1.1 client (raw-http.ts) and the parse of its answer, fed the
 * bytes of its socket in order; what follows the answer belongs to the next request pipelined on
 * that socket.
 */

/** What a request tells its caller (DirectCall implements it). */
export interface RawExchange {
  /** The answer's head; the caller may `destroy()` the request from here. */
  onHead(status: number, statusText: string, type: string, length: number | undefined): void;
  onBody(chunk: Buffer): void;
  /** The body is complete. */
  onEnd(): void;
  /**
   * The socket failed or closed before the answer was complete; `answered` says whether a head
   * had arrived, `retry` whether the request may be sent again: it was certainly not processed
   * (its socket was reused and closed before any answer byte, or the upstream announced `close`
   * on an answer before it).
   */
  onFail(err: Error, answered: boolean, retry: boolean): void;
}

/** The socket a request was written on, as a request needs it (raw-http.ts's RawLine). */
export interface RequestLine {
  /** The head request's answer is complete; `keep`: the upstream keeps the connection open. */
  answered(keep: boolean, announcedClose: boolean): void;
  /** A request given up by its caller. */
  abandon(): void;
  /** The socket is done: every request still waiting fails. */
  kill(err: Error | undefined, retry?: boolean): void;
}

/** The pool a request was posted to, as a request needs it (raw-http.ts's RawHttpPool). */
export interface RequestPool {
  /** A request not written yet, given up: it is simply not sent. */
  unqueue(req: RawRequest): boolean;
  /** An answer showed the upstream keeps HTTP/1.1 connections open. */
  keptAlive(): void;
}

/** Longest answer head read (node:http's default is 16 KiB). */
const MAX_HEAD = 64 * 1024;
const CRLFCRLF = Buffer.from('\r\n\r\n');
const STATUS_LINE = /^HTTP\/1\.([01]) (\d{3})(?: (.*))?$/;
const EMPTY = Buffer.alloc(0);

type Body = 'length' | 'chunked' | 'close';

export class RawRequest {
  /** The socket it was written on (undefined while it waits for the pool's next write). */
  line: RequestLine | undefined;
  /** Given up by its caller: its answer is still read (to reach the next one) but not told. */
  abandoned = false;
  private finished = false;
  private answered = false;
  /** Bytes of an unfinished head, or of an unfinished chunk-size line or trailer. */
  private pending: Buffer | undefined;
  private body: Body = 'length';
  /** Bytes left of the body (length) or of the current chunk (chunked). */
  private left = 0;
  /** Chunked: bytes of size lines, CRLFs and trailers, and of chunk data, read so far. */
  private framing = 0;
  private data = 0;
  /** Chunked: 'size' line, 'data', the CRLF after data, 'trailer' lines. */
  private chunkState: 'size' | 'data' | 'crlf' | 'trailer' = 'size';
  private keep = true;
  /** The answer said `Connection: close` (or was HTTP/1.0 without keep-alive). */
  private announcedClose = false;

  constructor(
    private readonly pool: RequestPool,
    /**
     * The request until written: its head in two parts (ASCII: the session's, cached, and this
     * request's own lines), its body (`content`), and the body's UTF-8 length. Kept apart so the write copies
     * each into one buffer without first joining them in a string.
     */
    public head: string,
    public tail: string,
    public content: string,
    public contentBytes: number,
    private readonly x: RawExchange,
  ) {}

  /**
   * Stops: no callback follows. Not yet written, it is not sent; alone on its socket, the socket
   * closes (that is how a 2026-07-28 call is cancelled); else its answer is skipped when it comes.
   */
  destroy(): void {
    if (this.finished || this.abandoned) return;
    this.abandoned = true;
    if (this.line === undefined) {
      this.finished = true;
      this.pool.unqueue(this);
    } else this.line.abandon();
  }

  /** The socket is lost before this answer completed. */
  lost(err: Error, retry: boolean): void {
    if (this.finished) return;
    this.finished = true;
    if (!this.abandoned) this.x.onFail(err, this.answered, retry && !this.answered);
  }

  /** The socket closed cleanly: true when that ends this answer (a close-delimited body). */
  endsAtClose(): boolean {
    if (this.finished || !this.answered || this.body !== 'close') return false;
    this.complete();
    return true;
  }

  /** Reads `chunk`; returns what is left of it once this answer is complete. */
  feed(chunk: Buffer): Buffer {
    let buf = chunk;
    while (!this.finished && buf.length > 0) {
      if (!this.answered) {
        const rest = this.readHead(buf);
        if (rest === undefined) return EMPTY;
        buf = rest;
      } else buf = this.body === 'chunked' ? this.readChunked(buf) : this.readPlain(buf);
    }
    return buf;
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
    const head = all.toString('latin1', 0, end);
    let eol = head.indexOf('\r\n');
    if (eol < 0) eol = head.length;
    const m = STATUS_LINE.exec(eol === head.length ? head : head.slice(0, eol));
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
    this.announcedClose = !this.keep;
    // Only Content-Type, Content-Length, Transfer-Encoding and Connection matter: other lines
    // (Date, Keep-Alive, session ids...) are passed over without being cut out.
    for (let at = eol + 2; at < head.length;) {
      let next = head.indexOf('\r\n', at);
      if (next < 0) next = head.length;
      const first = head.charCodeAt(at) | 0x20;
      if (first === 99 /* c */ || first === 116 /* t */) {
        const colon = head.indexOf(':', at);
        if (colon > at && colon < next) {
          const name = head.slice(at, colon).trim().toLowerCase();
          const value = head.slice(colon + 1, next).trim();
          if (name === 'content-type') type = value;
          else if (name === 'content-length') length = /^\d+$/.test(value) ? Number(value) : NaN;
          else if (name === 'transfer-encoding') chunked = /(^|,)\s*chunked\s*$/i.test(value);
          else if (name === 'connection') {
            const v = value.toLowerCase();
            if (v.includes('close')) this.keep = false;
            else if (v.includes('keep-alive') && m[1] === '0') this.keep = true;
            this.announcedClose = !this.keep;
          }
        }
      }
      at = next + 2;
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
    if (!this.abandoned) this.x.onHead(status, m[3] ?? '', type, chunked ? undefined : length);
    if (this.body === 'length' && this.left === 0) this.complete();
    return rest;
  }

  private readPlain(buf: Buffer): Buffer {
    if (this.body === 'close') {
      if (!this.abandoned) this.x.onBody(buf);
      return EMPTY;
    }
    const take = Math.min(this.left, buf.length);
    this.left -= take;
    if (!this.abandoned) this.x.onBody(take === buf.length ? buf : buf.subarray(0, take));
    if (this.left === 0) this.complete();
    return buf.subarray(take);
  }

  private readChunked(buf: Buffer): Buffer {
    if (this.chunkState === 'data') {
      const take = Math.min(this.left, buf.length);
      this.left -= take;
      this.data += take;
      if (!this.abandoned) this.x.onBody(take === buf.length ? buf : buf.subarray(0, take));
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
    // The answer bound counts data only: framing (endless trailers, tiny chunks with long
    // extensions) may not outgrow the data by more than a head's length.
    this.framing += nl + 1;
    if (this.framing > MAX_HEAD + 2 * this.data) {
      this.broken('too many chunk lines or trailers');
      return EMPTY;
    }
    const line = all.toString('latin1', 0, nl).replace(/\r$/, '');
    const rest = all.subarray(nl + 1);
    if (this.chunkState === 'crlf') {
      if (line !== '') this.broken('a chunk without its CRLF');
      this.chunkState = 'size';
    } else if (this.chunkState === 'trailer') {
      if (line === '') this.complete();
    } else {
      const size = /^([0-9a-fA-F]{1,8})\s*(;.*)?$/.exec(line);
      if (size === null) this.broken('a bad chunk size');
      else if ((this.left = parseInt(size[1]!, 16)) === 0) this.chunkState = 'trailer';
      else this.chunkState = 'data';
    }
    return rest;
  }

  private complete(): void {
    this.finished = true;
    if (this.keep) this.pool.keptAlive();
    this.line!.answered(this.keep, this.announcedClose);
    if (!this.abandoned) this.x.onEnd();
  }

  /** An answer that cannot be read: its socket cannot carry anything more. */
  private broken(why: string): void {
    if (this.finished) return;
    this.answered = true;
    this.line!.kill(new Error(`bad answer from the upstream: ${why}`));
  }
}
