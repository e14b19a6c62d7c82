/**
 * Reading a POST body within its limit: chunks are kept until the limit, then dropped while the
 * client finishes sending (so it reads our 413 instead of a reset), and past a drain cap the
 * connection is cut. State lives on the request and the listeners are shared: no closures per
 * request.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { wireError } from '../errors.js';
import { serializeWireError } from './jsonrpc.js';

interface BodyState {
  reader: BodyReader;
  res: ServerResponse;
  chunks: Buffer[];
  size: number;
  over: boolean;
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
  ) {
    this.drainCap = Math.max(maxBody * 4, 32 * 1024 * 1024);
  }

  read(req: IncomingMessage, res: ServerResponse): void {
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
    };
    req.on('data', onBodyData);
    req.on('end', onBodyEnd);
    req.on('error', onBodyError);
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
    st.chunks.push(chunk);
  }

  static end(req: BodyRequest): void {
    const st = req[BODY]!;
    req[BODY] = undefined;
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
