/**
 * SSE resumption on another process (cluster modes): every event of a resumable POST stream
 * (2025-11-25) is also kept in the shared event log and published on `stream.<id>`, so a client
 * whose connection broke (its process may have died) can come back with `Last-Event-ID` through
 * any process: that one replays the kept events after the id, then follows the live ones until
 * the answer. The process that wrote the stream drops the log once the answer reached a client.
 *
 * A process that dies cannot answer: each one marks itself alive in the store (a key with a
 * TTL, refreshed on a timer), every kept event names its writer and the request, and a resumed
 * stream whose writer stopped being alive ends with `instance_lost` for that request, which the
 * client may retry. A live writer's long call is followed to its real answer.
 */
import type { ServerResponse } from 'node:http';
import { wireError, type WireError } from '../errors.js';
import { serializeWireError, type JsonRpcId } from './jsonrpc.js';
import type { MessageBus } from '../cluster/bus.js';
import { STREAM_ID, type SessionRecordStore } from '../cluster/session-records.js';
import { channels } from '../cluster/topics.js';
import { resumeNotFound, type StreamMirror } from './resumable.js';

/** What the log keeps and the channel carries for one event. */
interface Kept {
  /** The 2025 session whose request the stream answers: only it may resume the stream. */
  session: string;
  frame: string;
  /** The request's answer: the stream ends after it. */
  final?: true;
  /** The instance running the call. */
  writer?: string;
  /** The id of the request the stream answers. */
  request?: JsonRpcId;
}

interface Live extends Kept {
  seq: number;
}

export class SharedStreams {
  private readonly heartbeat: NodeJS.Timeout;
  /** How often a resumed stream checks that its writer still runs. */
  private readonly checkMs: number;

  constructor(
    private readonly records: SessionRecordStore,
    private readonly bus: MessageBus,
    private readonly onError?: (err: unknown, where: string) => void,
  ) {
    // A dead writer is noticed at most `instanceTtlMs + checkMs` after it stopped.
    const ttl = records.limits.instanceTtlMs;
    this.checkMs = Math.min(1000, Math.floor(ttl / 5));
    const beat = (): void => {
      this.records
        .markAlive(this.bus.instanceId, ttl)
        .catch((err: unknown) => this.onError?.(err, 'instance liveness'));
    };
    beat();
    this.heartbeat = setInterval(beat, Math.floor(ttl / 5));
    this.heartbeat.unref();
  }

  close(): void {
    clearInterval(this.heartbeat);
  }

  /** The mirror of one session's resumable streams. */
  forSession(session: string): StreamMirror {
    return {
      event: (stream, seq, frame, final, request, principal) =>
        this.event(
          {
            session,
            frame,
            writer: this.bus.instanceId,
            ...(request === undefined ? {} : { request }),
          },
          stream,
          seq,
          final,
          principal,
        ),
      delivered: (stream) => this.delivered(stream),
    };
  }

  private event(base: Kept, stream: string, seq: number, final: boolean, principal: string) {
    const kept: Kept = final ? { ...base, final } : base;
    const frame = kept.frame;
    this.records
      .appendEvent(stream, seq, JSON.stringify(kept), principal)
      .catch((err: unknown) => this.onError?.(err, 'stream event append'));
    // The priming event (no data) is kept only so the stream is known before its first event.
    if (frame === '') return;
    const live: Live = { seq, ...kept };
    this.bus.publish(channels.stream(stream), live);
  }

  private delivered(stream: string): void {
    this.records
      .dropStream(stream)
      .catch((err: unknown) => this.onError?.(err, 'stream event drop'));
  }

  /**
   * A `Last-Event-ID` this process holds no stream for: replays the kept events after it and
   * follows the stream to its answer. The error when nothing is known of the stream, or when it
   * answers another session (no event of another session is ever written).
   */
  async resume(
    res: ServerResponse,
    session: string,
    lastEventId: string,
    headers: Record<string, string>,
  ): Promise<WireError | undefined> {
    const notFound = resumeNotFound(lastEventId);
    const cut = lastEventId.lastIndexOf('_');
    const stream = lastEventId.slice(0, cut);
    const after = Number(lastEventId.slice(cut + 1));
    if (cut <= 0 || !STREAM_ID.test(stream) || !Number.isInteger(after) || after < 0)
      return notFound;
    // Follow first, so no event falls between the replay and the live ones.
    const live: { early: Live[] | undefined; last: number } = { early: [], last: after };
    const write = (e: Live): void => {
      if (e.seq <= live.last || res.writableEnded) return;
      if (e.session !== session) {
        off();
        res.end();
        return;
      }
      live.last = e.seq;
      res.write(e.frame);
      if (e.final === true) {
        off();
        res.end();
        this.delivered(stream);
      }
    };
    const off = this.bus.subscribe(channels.stream(stream), (d) => {
      const e = d as Live;
      if (
        typeof e?.frame !== 'string' ||
        typeof e.seq !== 'number' ||
        typeof e.session !== 'string'
      )
        return;
      if (live.early !== undefined) live.early.push(e);
      else write(e);
    });
    let replay;
    try {
      replay = await this.records.eventsAfter(stream, after);
    } catch (err) {
      off();
      throw err;
    }
    const kept = (replay?.events ?? []).map(({ seq, data }) => ({
      seq,
      ...(JSON.parse(data) as Kept),
    }));
    if (replay === undefined || res.destroyed || kept.some((e) => e.session !== session)) {
      off();
      return res.destroyed ? undefined : notFound;
    }
    res.writeHead(200, {
      'Content-Type': 'text/event-stream',
      'Cache-Control': 'no-cache, no-transform',
      'X-Accel-Buffering': 'no',
      ...headers,
    });
    res.once('close', off);
    for (const e of kept) write(e);
    // Events were dropped (bounds): the client learns of the gap by the stream ending early.
    if (!replay.complete && !res.writableEnded) {
      off();
      res.end();
      return undefined;
    }
    const early = live.early ?? [];
    live.early = undefined;
    for (const e of early) write(e);
    if (!res.writableEnded && replay.head !== undefined)
      this.watchWriter(res, stream, JSON.parse(replay.head) as Kept, live, off);
    return undefined;
  }

  /**
   * Follows the liveness of the instance running the call: once it is gone, the answer can never
   * come, so the stream ends with `instance_lost` for the request (the client may retry it).
   */
  private watchWriter(
    res: ServerResponse,
    stream: string,
    head: Kept,
    live: { last: number },
    off: () => void,
  ): void {
    const writer = head.writer;
    if (typeof writer !== 'string' || writer === this.bus.instanceId) return;
    let busy = false;
    const check = async (): Promise<void> => {
      if (res.writableEnded || res.destroyed) return void clearInterval(timer);
      if (busy) return;
      busy = true;
      try {
        if (await this.records.isAlive(writer)) return;
      } catch (err) {
        this.onError?.(err, 'instance liveness check');
        return;
      } finally {
        busy = false;
      }
      clearInterval(timer);
      if (res.writableEnded || res.destroyed) return;
      off();
      const request = head.request;
      if (typeof request === 'string' || typeof request === 'number') {
        const json = serializeWireError(request, wireError('instance_lost', { instance: writer }));
        res.write(`id: ${stream}_${live.last + 1}\nevent: message\ndata: ${json}\n\n`);
      }
      res.end();
      this.delivered(stream);
    };
    const timer = setInterval(() => void check(), this.checkMs);
    timer.unref();
    res.once('close', () => clearInterval(timer));
    void check();
  }
}
