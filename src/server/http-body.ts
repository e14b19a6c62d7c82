/**
 * Reading a POST body within its limit: chunks are kept until the limit, then dropped while the
 * client finishes sending (so it reads our 413 instead of a reset), and past a drain cap the
 * connection is cut. The bytes held while bodies arrive are also bounded per principal and in
 * all (limits.body_bytes): without that, clients that stall just short of a body's end hold
 * 4 MiB per connection, and connections are not bounded. State lives on the request and the
 * listeners are shared: no closures per request.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { wireError, type WireError } from '../errors.js';
import { serializeWireError } from './jsonrpc.js';
import type { RefusalCounter } from './session-limits.js';

interface BodyState {
  reader: BodyReader;
  res: ServerResponse;
  chunks: Buffer[];
  size: number;
  over: boolean;
  /** The principal the held bytes are counted for ('' without authentication). */
  who: string;
  /** Bytes taken from the budget for this body (its kept chunks). */
  held: number;
}

/** Body bytes arriving at once, per principal and in all (limits.body_bytes). */
export class BodyBudget {
  private total = 0;
  /** Only principals with bytes held: entries go when they reach zero. */
  private readonly held = new Map<string, number>();

  constructor(
    private readonly perPrincipal: number,
    private readonly max: number,
  ) {}

  /** Takes `n` bytes for `who`, or answers the refusal when a bound would be passed. */
  take(who: string, n: number): WireError | undefined {
    const mine = this.held.get(who) ?? 0;
    if (mine + n > this.perPrincipal)
      return wireError('body_bytes_principal', { max: this.perPrincipal });
    if (this.total + n > this.max) return wireError('body_bytes_total', { max: this.max });
    this.held.set(who, mine + n);
    this.total += n;
    return undefined;
  }

  give(who: string, n: number): void {
    if (n === 0) return;
    const left = (this.held.get(who) ?? 0) - n;
    if (left > 0) this.held.set(who, left);
    else this.held.delete(who);
    this.total -= n;
  }
}
const BODY = Symbol('moonhub.body');
type BodyRequest = IncomingMessage & { [BODY]?: BodyState };

export class BodyReader {
  /** Past this much we stop reading a too-large body and drop the connection. */
  private readonly drainCap: number;

  constructor(
    private readonly maxBody: number,
    /** The whole body arrived within the limit. */
    private readonly onBody: (req: IncomingMessage, res: ServerResponse, body: Buffer) => void,
    private readonly budget: BodyBudget,
    private readonly refused?: RefusalCounter,
  ) {
    this.drainCap = Math.max(maxBody * 4, 32 * 1024 * 1024);
  }

  /** Reads the body of `who`'s request (the principal, '' without authentication). */
  read(req: IncomingMessage, res: ServerResponse, who: string): void {
    const declared = Number(req.headers['content-length']);
    if (declared > this.drainCap) {
      this.tooLarge(res, true);
      req.resume();
      return;
    }
    (req as BodyRequest)[BODY] = {
      reader: this,
      res,
      chunks: [],
      size: 0,
      over: declared > this.maxBody,
      who,
      held: 0,
    };
    req.on('data', onBodyData);
    req.on('end', onBodyEnd);
    req.on('error', onBodyError);
    req.on('close', onBodyClose);
  }

  /** Gives back what a body held (it ended, was refused, or its connection went). */
  static release(st: BodyState): void {
    st.reader.budget.give(st.who, st.held);
    st.held = 0;
  }

  /**
   * Over its principal's or the total budget: answered at once (the client may still be
   * sending), and the rest of the body is drained without being kept, as for a 413.
   */
  private overBudget(st: BodyState, err: WireError): void {
    BodyReader.release(st);
    st.over = true;
    st.chunks.length = 0;
    this.refused?.(err.key === 'body_bytes_principal' ? 'body_bytes_principal' : 'body_bytes');
    if (st.res.headersSent) return;
    st.res.writeHead(err.status, {
      'Content-Type': 'application/json',
      Connection: 'close',
      'Retry-After': '1',
    });
    st.res.end(serializeWireError(null, err));
  }

  tooLarge(res: ServerResponse, closeNow: boolean): void {
    if (res.headersSent) return;
    const err = wireError('body_too_large', { max: this.maxBody });
    res.writeHead(err.status, { 'Content-Type': 'application/json', Connection: 'close' });
    res.end(serializeWireError(null, err));
    if (closeNow) res.once('finish', () => res.socket?.destroySoon());
  }

  static data(req: BodyRequest, chunk: Buffer): void {
    const st = req[BODY]!;
    const reader = st.reader;
    st.size += chunk.length;
    if (st.over || st.size > reader.maxBody) {
      st.over = true;
      st.chunks.length = 0;
      if (st.size > reader.drainCap) {
        reader.tooLarge(st.res, true);
        req.destroy();
      }
      return;
    }
    const refusal = reader.budget.take(st.who, chunk.length);
    if (refusal !== undefined) return reader.overBudget(st, refusal);
    st.held += chunk.length;
    st.chunks.push(chunk);
  }

  static end(req: BodyRequest): void {
    const st = req[BODY]!;
    req[BODY] = undefined;
    BodyReader.release(st);
    if (st.over) {
      st.reader.tooLarge(st.res, false);
      return;
    }
    const buf = st.chunks.length === 1 ? st.chunks[0]! : Buffer.concat(st.chunks, st.size);
    st.reader.onBody(req, st.res, buf);
  }
}

function onBodyData(this: BodyRequest, chunk: Buffer): void {
  BodyReader.data(this, chunk);
}

function onBodyEnd(this: BodyRequest): void {
  BodyReader.end(this);
}

function onBodyError(this: BodyRequest): void {
  const st = this[BODY];
  if (st !== undefined && !st.res.headersSent) st.res.destroy();
}

/** The connection went before the body's end: its bytes go back to the budget. */
function onBodyClose(this: BodyRequest): void {
  const st = this[BODY];
  if (st === undefined) return;
  this[BODY] = undefined;
  BodyReader.release(st);
}
