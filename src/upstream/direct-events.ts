/**
 * The event stream a direct call (direct-call.ts) reads when the upstream answers its POST with
 * `text/event-stream`: lines split into events, each event's data handed to the call, and the
 * last event id and `retry` kept for resuming the stream with a GET. One reader per streamed
 * answer, made when the stream starts, so a JSON answer pays for none.
 */

/** Who hears the events: `onEventData` returns false once the call has ended (reading stops). */
export interface EventSink {
  onEventData(data: string): boolean;
}

export class EventStreamReader {
  private buf = '';
  private data = '';
  /** The last event's id: a stream that ends after one can be resumed from it. */
  lastEventId: string | undefined;
  /** The upstream's `retry` field, ms: how long to wait before resuming. */
  retryMs = 1000;

  /** Takes a chunk; returns the characters now held (the partial line and the event's data). */
  add(chunk: string): number {
    this.buf += chunk;
    return this.buf.length + this.data.length;
  }

  /** Reads the whole lines held, handing each event with data to `sink`. */
  read(sink: EventSink): void {
    let start = 0;
    for (;;) {
      const nl = this.buf.indexOf('\n', start);
      if (nl < 0) break;
      let line = this.buf.slice(start, nl);
      start = nl + 1;
      if (line.endsWith('\r')) line = line.slice(0, -1);
      if (line === '') {
        const data = this.data;
        this.data = '';
        if (data !== '' && !sink.onEventData(data)) return;
        continue;
      }
      const colon = line.indexOf(':');
      if (colon === 0) continue;
      const field = colon < 0 ? line : line.slice(0, colon);
      let value = colon < 0 ? '' : line.slice(colon + 1);
      if (value.startsWith(' ')) value = value.slice(1);
      if (field === 'data') this.data += this.data === '' ? value : `\n${value}`;
      else if (field === 'id') this.lastEventId = value;
      else if (field === 'retry' && /^\d+$/.test(value)) this.retryMs = Number(value);
    }
    this.buf = this.buf.slice(start);
  }

  /** A resumed stream starts afresh: no partial line, no event being read. */
  restart(): void {
    this.buf = '';
    this.data = '';
  }
}
