/**
 * SSE resumption on another process (cluster modes): every event of a resumable POST stream
 * (2025-11-25) is also kept in the shared event log and published on `stream.<id>`, so a client
 * whose connection broke (its process may have died) can come back with `Last-Event-ID` through
 * any process: that one replays the kept events after the id, then follows the live ones until
 * the answer. The process that wrote the stream drops the log once the answer reached a client.
 */
import type { ServerResponse } from 'node:http';
import { wireError, type WireError } from '../errors.js';
import type { MessageBus } from '../cluster/bus.js';
import { STREAM_ID, type SessionRecordStore } from '../cluster/session-records.js';
import { channels } from '../cluster/topics.js';
import type { StreamMirror } from './resumable.js';

/** What the log keeps and the channel carries for one event. */
interface Kept {
  /** The 2025 session whose request the stream answers: only it may resume the stream. */
  session: string;
  frame: string;
  /** The request's answer: the stream ends after it. */
  final?: true;
}

interface Live extends Kept {
  seq: number;
}

export class SharedStreams {
  constructor(
    private readonly records: SessionRecordStore,
    private readonly bus: MessageBus,
    private readonly onError?: (err: unknown, where: string) => void,
  ) {}

  /** The mirror of one session's resumable streams. */
  forSession(session: string): StreamMirror {
    return {
      event: (stream, seq, frame, final) => this.event(session, stream, seq, frame, final),
      delivered: (stream) => this.delivered(stream),
    };
  }

  private event(session: string, stream: string, seq: number, frame: string, final: boolean) {
    const kept: Kept = final ? { session, frame, final } : { session, frame };
    this.records
      .appendEvent(stream, seq, JSON.stringify(kept))
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
    const notFound = wireError('resume_not_found', { event: lastEventId });
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
    return undefined;
  }
}
