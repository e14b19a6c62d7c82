/**
 * SSE polling and resumption for 2025-11-25 sessions (SEP-1699): a POST answered as an event
 * stream opens with a priming event (an id, a `retry` hint, empty data), every later event
 * carries an id, and the events are kept until the request's answer has been delivered. When
 * the stream ends early (the server lets go of a long call, or the client drops), a GET with
 * `Last-Event-ID` replays what the client missed and carries the stream on to its answer.
 */
import { randomBytes } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { wireError, type WireError } from '../errors.js';
import type { JsonRpcId } from './jsonrpc.js';
import type { Parkable, ParkedBudget } from './parked-budget.js';

/** Reconnection delay suggested to clients in the priming event. */
export const DEFAULT_RETRY_MS = 1000;

/** Hub event ids are ~40 characters; a longer client one (up to 16 KiB) is not echoed whole. */
const ECHOED_EVENT_ID = 64;

/** The 404 for a Last-Event-ID that names no stream this session may resume. */
export function resumeNotFound(lastEventId: string): WireError {
  const shown =
    lastEventId.length > ECHOED_EVENT_ID
      ? `${lastEventId.slice(0, ECHOED_EVENT_ID)}... (${lastEventId.length} characters)`
      : lastEventId;
  return wireError('resume_not_found', { event: shown });
}
/** Streams kept per session waiting for their client to come back; the oldest goes first. */
const MAX_PARKED = 64;
/** Events kept per stream for a replay; a chattier call keeps only its latest ones. */
const MAX_EVENTS = 1000;

/**
 * Cluster modes: where a stream's events are also kept, so another process can resume it
 * (`shared-streams.ts`). Absent for a single process.
 */
export interface StreamMirror {
  /**
   * One event (`final`: the request's answer); seq 0 with an empty frame is the priming one.
   * `request` is the id of the request the stream answers; `principal` whom its session is
   * (the log's per-principal bound).
   */
  event(
    stream: string,
    seq: number,
    frame: string,
    final: boolean,
    request: JsonRpcId | undefined,
    principal: string,
  ): void;
  /** The answer reached a client: the kept events may go. */
  delivered(stream: string): void;
}

export class ResumableStream implements Parkable {
  private seq = 0;
  private events: { seq: number; frame: string }[] = [];
  /** Characters of the kept events; past `maxKeptBytes` the oldest go (like past MAX_EVENTS). */
  keptChars = 0;
  private res: ServerResponse | undefined;
  /** The answer has been written to a connected client: nothing is left to resume. */
  done = false;
  private answered = false;
  /** Forgotten while parked (a bound): it keeps nothing more and cannot be resumed. */
  private lost = false;
  /** Told when the stream is forgotten for a bound: the call behind it is aborted. */
  onLost: ((limit: string) => void) | undefined = undefined;

  constructor(
    readonly id: string,
    res: ServerResponse,
    private readonly owner: ResumableStreams,
    /** Bytes of events kept for a replay (limits.streams.buffer_bytes). */
    private readonly maxKeptBytes: number,
    private readonly request?: JsonRpcId,
  ) {
    this.res = res;
  }

  get principal(): string {
    return this.owner.principal;
  }

  /** Bytes waiting for the connected client to read (0 while none is connected). */
  get waitingBytes(): number {
    return this.res?.writableLength ?? 0;
  }

  /** Drops the connected client that does not read; the answer can still be fetched by a resume. */
  cutOff(): void {
    const res = this.res;
    this.res = undefined;
    res?.destroy();
    if (!this.done) this.owner.park(this);
  }

  /** The priming event: an id to resume from, and when to reconnect. */
  prime(retryMs: number): void {
    this.res?.write(`id: ${this.id}_0\nretry: ${retryMs}\ndata: \n\n`);
    this.owner.mirror?.event(this.id, 0, '', false, this.request, this.principal);
  }

  /** Sends one message (kept until the answer is delivered). */
  send(json: string, final = false): void {
    if (this.lost) return;
    const seq = ++this.seq;
    const frame = `id: ${this.id}_${seq}\nevent: message\ndata: ${json}\n\n`;
    this.events.push({ seq, frame });
    this.keptChars += frame.length;
    while (
      this.events.length > 1 &&
      (this.events.length > MAX_EVENTS || this.keptChars > this.maxKeptBytes)
    )
      this.keptChars -= this.events.shift()!.frame.length;
    this.owner.mirror?.event(this.id, seq, frame, final, this.request, this.principal);
    if (this.res !== undefined) this.res.write(frame);
    else this.owner.grew(this);
  }

  /** Sends the answer; the stream ends when a client is connected to read it. */
  finish(json: string): void {
    this.send(json, true);
    this.answered = true;
    if (this.res !== undefined) this.complete();
  }

  /** Lets go of the client's connection now; it comes back with Last-Event-ID. */
  detach(retryMs: number): void {
    const res = this.res;
    if (res === undefined) return;
    this.res = undefined;
    res.end(`retry: ${retryMs}\n\n`);
    this.owner.park(this);
  }

  /** The client went away: keep the events for a reconnection. */
  dropped(): void {
    if (this.done || this.res === undefined) return;
    this.res = undefined;
    this.owner.park(this);
  }

  /** A reconnecting client: replay what came after `afterSeq`, then carry on. */
  resume(res: ServerResponse, afterSeq: number, headers: Record<string, string>): void {
    res.writeHead(200, {
      'Content-Type': 'text/event-stream',
      'Cache-Control': 'no-cache, no-transform',
      'X-Accel-Buffering': 'no',
      ...headers,
    });
    for (const e of this.events) if (e.seq > afterSeq) res.write(e.frame);
    this.res = res;
    res.once('close', () => this.dropped());
    if (this.answered) this.complete();
  }

  /** Forgotten while parked (too many parked, or past a bound): nothing of it is kept. */
  lose(limit: string): void {
    if (this.lost || this.done) return;
    this.lost = true;
    this.events = [];
    this.keptChars = 0;
    this.owner.forget(this);
    this.owner.mirror?.delivered(this.id);
    const onLost = this.onLost;
    this.onLost = undefined;
    onLost?.(limit);
  }

  private complete(): void {
    this.done = true;
    this.owner.mirror?.delivered(this.id);
    this.res?.end();
    this.res = undefined;
    this.owner.forget(this);
  }
}

/** One session's streams that may still be resumed. */
export class ResumableStreams {
  private readonly parked = new Map<string, ResumableStream>();

  constructor(
    readonly mirror?: StreamMirror,
    /** What parked streams may keep, per principal and in all (limits.streams.parked_bytes_*). */
    private readonly budget?: ParkedBudget,
    /** Whom the session belongs to, for the budget. */
    readonly principal = '',
  ) {}

  open(res: ServerResponse, maxKeptBytes: number, request?: JsonRpcId): ResumableStream {
    return new ResumableStream(randomBytes(8).toString('hex'), res, this, maxKeptBytes, request);
  }

  park(stream: ResumableStream): void {
    this.parked.set(stream.id, stream);
    if (this.parked.size > MAX_PARKED)
      this.parked.values().next().value!.lose(`at most ${MAX_PARKED} per session`);
    if (this.parked.get(stream.id) === stream) this.budget?.charge(stream);
  }

  /** A parked stream kept another event (its call still runs). */
  grew(stream: ResumableStream): void {
    if (this.parked.get(stream.id) === stream) this.budget?.charge(stream);
  }

  forget(stream: ResumableStream): void {
    if (this.parked.get(stream.id) !== stream) return;
    this.parked.delete(stream.id);
    this.budget?.release(stream);
  }

  /** The parked stream a `Last-Event-ID` points into, and the event it names. */
  find(lastEventId: string): { stream: ResumableStream; seq: number } | undefined {
    const cut = lastEventId.lastIndexOf('_');
    if (cut <= 0) return undefined;
    const stream = this.parked.get(lastEventId.slice(0, cut));
    const seq = Number(lastEventId.slice(cut + 1));
    if (stream === undefined || !Number.isInteger(seq) || seq < 0) return undefined;
    this.forget(stream);
    return { stream, seq };
  }

  /** The session ended: its calls are aborted by the session, its parked streams dropped. */
  clear(): void {
    for (const stream of this.parked.values()) this.budget?.release(stream);
    this.parked.clear();
  }
}
