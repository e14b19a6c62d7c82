/**
 * One proxied request in flight on the direct path (direct-http.ts sends it): its POST through
 * the lean client or node:http, the answer read as JSON or as an event stream (progress relayed,
 * other messages handed to the SDK client, a cleanly ended stream resumed with a GET), the
 * caller's abort, the idle and total timers, and the bound on an answer's bytes. Its requests'
 * heads are built in direct-request.ts, the stream's events split in direct-events.ts, what a
 * whole answer means is read in direct-answer.ts, and node:http's listeners are in
 * direct-listeners.ts.
 */
import type { ClientRequest, IncomingMessage } from 'node:http';
import { StringDecoder } from 'node:string_decoder';
import { SdkErrorCode } from '@modelcontextprotocol/client';
import type { AbortWatch } from '../registry/types.js';
import { localError } from '../errors.js';
import { type INPUT_REQUIRED, type CallOwner, type DirectOptions } from './direct-types.js';
import { FIELD_VALUE, type DirectMethod } from './direct-wire.js';
import { answerOutcome, Failed, httpError, jsonOutcome, type Outcome } from './direct-answer.js';
import { EventStreamReader, type EventSink } from './direct-events.js';
import { postHeaders, rawPostTail, resumeHeaders } from './direct-request.js';
import type { RawExchange, RawRequest } from './raw-http.js';
import { UpstreamError } from './upstream-error.js';
import {
  CALL,
  onBodyData,
  onBodyEnd,
  onCutOff,
  onPostError,
  onPostResponse,
  onResponseError,
  onStreamData,
  onStreamEnd,
  onTimer,
  resumeLater,
  type ListenedCall,
  type Tagged,
} from './direct-listeners.js';

/** One request in flight on the direct path. */
export class DirectCall implements RawExchange, EventSink, ListenedCall {
  /** Its slot in the owner's `live` table, once started. */
  private slot = -1;
  private req: ClientRequest | undefined;
  /** The lean client's request (plain-http upstreams), when it carries this call. */
  private raw: RawRequest | undefined;
  /** The lean client's answer is complete (node:http: `res.complete`). */
  private rawComplete = false;
  private rawStatusText = '';
  private rawStream = false;
  private decoder: StringDecoder | undefined;
  private res: IncomingMessage | undefined;
  private timer: NodeJS.Timeout | undefined;
  private readonly started = Date.now();
  private done = false;
  /** What this call listens to for its caller's abort, while the request is out. */
  private watching: AbortWatch | undefined;
  private signal: AbortSignal | undefined;
  /** Retried once on a fresh socket when a reused keep-alive socket was found closed. */
  private resent = false;
  /** The event stream being read (made when one starts). */
  private events: EventStreamReader | undefined;
  private failedResumes = 0;
  // A JSON answer being read: its chunks, and their bytes (bounded by the session's answerBytes).
  private chunk: Buffer | undefined;
  private chunks: Buffer[] | undefined;
  private bytes = 0;
  private status = 0;
  private type = '';

  constructor(
    private readonly owner: CallOwner,
    private readonly id: string,
    private readonly method: DirectMethod,
    private readonly body: string,
    /** The session's headers for this method and name (no Content-Length). */
    private readonly base: string[],
    private readonly trace: string[] | undefined,
    private readonly opts: DirectOptions,
    private readonly resolve: (r: Record<string, unknown> | typeof INPUT_REQUIRED) => void,
    private readonly reject: (e: unknown) => void,
  ) {}

  start(): void {
    const caller = this.opts.caller;
    const watch = caller.abortWatch;
    if (watch !== undefined) {
      if (!watch.watch(this)) return this.fail(new UpstreamError('the call was cancelled'));
      this.watching = watch;
    } else {
      const signal = caller.signal;
      if (signal !== undefined) {
        if (signal.aborted) return this.fail(new UpstreamError('the call was cancelled'));
        signal.addEventListener('abort', this, { once: true });
        this.signal = signal;
      }
    }
    this.timer = setTimeout(onTimer, Math.min(this.opts.idleMs, this.opts.totalMs), this);
    this.slot = this.owner.live.add(this);
    this.post();
  }

  /** The caller's signal aborted (this object is its listener: no closure per call). */
  handleEvent(): void {
    this.cancel(new UpstreamError('the call was cancelled'));
  }

  /** The caller's abort, heard through its AbortWatch. */
  handleAbort(): void {
    this.cancel(new UpstreamError('the call was cancelled'));
  }

  private post(): void {
    const pool = this.owner.pool;
    const head = pool === undefined ? undefined : this.owner.headOf(this.base);
    const trace = this.trace;
    if (head !== undefined && (trace === undefined || FIELD_VALUE.test(trace[1]!))) {
      const bytes = Buffer.byteLength(this.body);
      this.raw = pool!.postParts(head, rawPostTail(bytes, trace), this.body, bytes, this);
      return;
    }
    const headers = postHeaders(this.base, this.body, trace);
    const req = this.owner.open('POST', headers) as Tagged<ClientRequest>;
    req[CALL] = this;
    this.req = req;
    req.on('response', onPostResponse);
    req.on('error', onPostError);
    req.end(this.body);
  }

  onRequestError(req: ClientRequest, err: Error): void {
    if (this.done || req !== this.req) return;
    // A keep-alive socket the upstream closed as we wrote on it: the request never arrived.
    const code = (err as { code?: string }).code;
    if (
      req.reusedSocket &&
      !this.resent &&
      this.res === undefined &&
      (code === 'ECONNRESET' || code === 'EPIPE')
    ) {
      this.resent = true;
      return this.post();
    }
    if (this.res === undefined) {
      this.fail(err);
      return this.owner.session.networkFailed(err);
    }
    this.lostStream(err.message);
  }

  onResponse(response: IncomingMessage): void {
    if (this.done) return void response.resume();
    const res = response as Tagged<IncomingMessage>;
    res[CALL] = this;
    this.res = res;
    const status = res.statusCode ?? 0;
    const type = (res.headers['content-type'] ?? '').split(';', 1)[0]!.trim().toLowerCase();
    this.status = status;
    this.type = type;
    res.on('error', onResponseError);
    if (status === 200 && type === 'text/event-stream') {
      this.events = new EventStreamReader();
      res.setEncoding('utf8');
      res.on('data', onStreamData);
      res.on('end', onStreamEnd);
      res.on('aborted', onCutOff);
      return;
    }
    // A body announced larger than the bound is refused before it is read.
    const length = res.headers['content-length'];
    if (length !== undefined && Number(length) > this.owner.session.answerBytes)
      return this.tooLarge();
    res.on('data', onBodyData);
    res.on('end', onBodyEnd);
  }

  // ---- the lean client's answer (RawExchange) -------------------------------------------------

  onHead(status: number, statusText: string, type: string, length: number | undefined): void {
    if (this.done) return;
    this.status = status;
    this.rawStatusText = statusText;
    this.type = type.split(';', 1)[0]!.trim().toLowerCase();
    if (status === 200 && this.type === 'text/event-stream') {
      this.rawStream = true;
      this.events = new EventStreamReader();
      this.decoder = new StringDecoder('utf8');
      return;
    }
    if (length !== undefined && length > this.owner.session.answerBytes) this.tooLarge();
  }

  onBody(chunk: Buffer): void {
    if (this.done) return;
    if (this.rawStream) this.onEvents(this.decoder!.write(chunk));
    else this.onBodyData(chunk);
  }

  onEnd(): void {
    this.rawComplete = true;
    if (this.done) return;
    if (!this.rawStream) return this.bodyEnd(this.rawStatusText);
    const rest = this.decoder!.end();
    if (rest !== '') this.onEvents(rest);
    this.onStreamEnd();
  }

  onFail(err: Error, answered: boolean, retry: boolean): void {
    if (this.done) return;
    const code = (err as { code?: string }).code;
    // A keep-alive socket the upstream closed as we wrote on it, or a request pipelined behind an
    // answer that announced `close`: the request was not processed (a sent call is never retried).
    if (retry && !answered && !this.resent && (code === 'ECONNRESET' || code === 'EPIPE')) {
      this.resent = true;
      return this.post();
    }
    if (!answered) {
      this.fail(err);
      return this.owner.session.networkFailed(err);
    }
    this.lostStream(
      err.message.startsWith('bad answer') ? err.message : 'the response was cut off',
    );
  }

  // ---- node:http's answer ---------------------------------------------------------------------

  onBodyData(chunk: Buffer): void {
    if (this.done) return;
    this.bytes += chunk.length;
    if (this.bytes > this.owner.session.answerBytes) return this.tooLarge();
    if (this.chunk === undefined) this.chunk = chunk;
    else (this.chunks ??= [this.chunk]).push(chunk);
  }

  private tooLarge(): void {
    this.fail(
      new UpstreamError(
        localError('upstream_answer_too_large', { max: this.owner.session.answerBytes }).message,
      ),
    );
  }

  onBodyEnd(res: IncomingMessage): void {
    if (this.done) return;
    if (!res.complete) return this.lostStream('the response was cut off');
    this.bodyEnd(res.statusMessage ?? '');
  }

  private bodyEnd(statusText: string): void {
    try {
      this.readBody(statusText);
    } catch (err) {
      this.broke(err);
    }
  }

  private readBody(statusText: string): void {
    const text =
      this.chunks !== undefined
        ? Buffer.concat(this.chunks).toString('utf8')
        : (this.chunk?.toString('utf8') ?? '');
    const era = this.owner.session.era;
    if (this.status === 200 && this.type === 'application/json')
      return this.settle(jsonOutcome(text, this.id, this.method, era));
    this.fail(httpError(this.status, statusText, this.type, text, this.id, era));
  }

  /** The answer read: the call ends with its result or its error. */
  private settle(outcome: Outcome): void {
    if (outcome instanceof Failed) this.fail(outcome.error);
    else this.finish(outcome);
  }

  // ---- the event stream ---------------------------------------------------------------------

  onEvents(chunk: string): void {
    if (this.done) return;
    const events = this.events!;
    // One event at a time is held; counted in characters (at most the bytes read).
    if (events.add(chunk) > this.owner.session.answerBytes) return this.tooLarge();
    try {
      events.read(this);
    } catch (err) {
      this.broke(err);
    }
  }

  /** One event's data (EventSink); false once the call has ended. */
  onEventData(data: string): boolean {
    this.onEvent(data);
    return !this.done;
  }

  private onEvent(data: string): void {
    let msg: Record<string, unknown>;
    try {
      msg = JSON.parse(data) as Record<string, unknown>;
    } catch {
      return; // The SDK reports such an event and reads on; so does this.
    }
    // `null` (or any non-object) is no message: reading its members would throw out of the
    // stream's listener and end the hub's process.
    if (typeof msg !== 'object' || msg === null) return;
    if (msg.id === this.id && ('result' in msg || 'error' in msg))
      return this.settle(answerOutcome(msg, this.method, this.owner.session.era));
    if (msg.method === 'notifications/progress') {
      const p = msg.params as Record<string, unknown> | undefined;
      if (p?.progressToken === this.id) {
        this.alive();
        if (this.done) return;
        if (typeof p.progress === 'number')
          this.opts.caller.peer?.progress(
            p.progress,
            typeof p.total === 'number' ? p.total : undefined,
            typeof p.message === 'string' ? p.message : undefined,
          );
        return;
      }
    }
    this.owner.session.deliver(msg);
  }

  onStreamEnd(): void {
    if (this.done) return;
    if (this.res?.complete === false) return this.lostStream('the response was cut off');
    // Ended without the answer: after an event id the stream can be resumed (SSE polling).
    const events = this.events;
    if (events?.lastEventId === undefined || this.owner.session.era === 'modern')
      return this.lostStream('the upstream ended the stream without answering');
    setTimeout(resumeLater, events.retryMs, this).unref();
  }

  resume(): void {
    if (this.done) return;
    const post = postHeaders(this.base, this.body, this.trace);
    const req = this.owner.open('GET', resumeHeaders(post, this.events?.lastEventId));
    this.req = req;
    this.res = undefined;
    req.on('response', (res) => {
      if (res.statusCode !== 200) {
        res.resume();
        return this.resumeFailed(`HTTP ${res.statusCode} resuming the stream`);
      }
      this.failedResumes = 0;
      this.events?.restart();
      (res as Tagged<IncomingMessage>)[CALL] = this;
      this.res = res;
      res.setEncoding('utf8');
      res.on('data', onStreamData);
      res.on('end', onStreamEnd);
      res.on('error', onResponseError);
    });
    req.on('error', (err) => this.resumeFailed(err.message));
    req.end();
  }

  private resumeFailed(reason: string): void {
    if (this.done) return;
    // As the SDK's transport is configured here: two reconnection attempts, then give up.
    if (++this.failedResumes > 2) return this.lostStream(reason);
    setTimeout(resumeLater, this.events!.retryMs * 2 ** this.failedResumes, this).unref();
  }

  lostStream(reason: string): void {
    if (this.done) return;
    this.fail(new UpstreamError(`connection lost: ${reason}`));
    this.owner.session.networkFailed(new Error(reason));
  }

  // ---- ending -------------------------------------------------------------------------------

  /**
   * Reading the answer threw (input no check foresaw, or a bug): this call fails with that
   * error and the hub serves on. The upstream is untrusted, and an exception leaving a socket's
   * listener would end the hub's process.
   */
  private broke(err: unknown): void {
    if (this.done) return;
    const why = err instanceof Error ? err.message : String(err);
    this.fail(new UpstreamError(`could not read the upstream's answer: ${why}`));
  }

  timedOut(): void {
    this.cancel(
      new UpstreamError(
        `timed out waiting for ${this.owner.session.url.href}: Request timed out`,
        undefined,
        SdkErrorCode.RequestTimeout,
      ),
    );
  }

  /** Progress keeps a call alive: the idle timer starts again, never past the total limit. */
  private alive(): void {
    const left = this.opts.totalMs - (Date.now() - this.started);
    if (left <= 0) return this.timedOut();
    if (left < this.opts.idleMs) {
      clearTimeout(this.timer);
      this.timer = setTimeout(onTimer, left, this);
    } else this.timer?.refresh();
  }

  /** Cancellation or timeout: the upstream is told (2025: a notification; 2026: the stream closes). */
  cancel(reason: UpstreamError): void {
    if (this.done) return;
    if (this.owner.session.era === 'legacy') this.owner.session.cancelled(this.id, reason.message);
    this.fail(reason);
  }

  abort(reason: Error): void {
    if (!this.done) this.fail(reason);
  }

  private finish(result: Record<string, unknown> | typeof INPUT_REQUIRED): void {
    this.cleanup();
    this.resolve(result);
    // Drain what is left so the keep-alive socket goes back to the pool.
    this.res?.resume();
  }

  private fail(err: unknown): void {
    this.cleanup();
    this.reject(err);
    if (this.raw !== undefined && !this.rawComplete) this.raw.destroy();
    // Unfinished, the request's socket closes (in 2026-07-28 that is how a call is cancelled).
    if (this.res === undefined || !this.res.complete) this.req?.destroy();
  }

  private cleanup(): void {
    this.done = true;
    this.owner.live.delete(this.slot, this);
    if (this.timer !== undefined) clearTimeout(this.timer);
    if (this.watching !== undefined) this.watching.unwatch(this);
    else this.signal?.removeEventListener('abort', this);
  }
}
