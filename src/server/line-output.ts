/**
 * The stdio transport's output: the lines written during one event-loop turn go out in one
 * `write` at its end (a `setImmediate`). Each `write` on a pipe is a syscall that also wakes the
 * reader; a plugin worker's bundle of results, or a batch's answers, used to cost one each
 * (measured: the largest item of a stdio call on the hub's thread, 8.5 µs of 34).
 */
import type { Writable } from 'node:stream';

export class LineOutput {
  private pending = '';
  private scheduled = false;
  private readonly flushNow = (): void => this.flush();

  constructor(private readonly output: Writable) {}

  /**
   * What waits for the peer to read: the stream's own buffer and this turn's lines (counted
   * in UTF-16 units, a lower bound of their bytes, so a bound on it is never looser).
   */
  get waiting(): number {
    return this.output.writableLength + this.pending.length;
  }

  /** Queues one line (without its newline) for the end of this turn. */
  line(text: string): void {
    this.pending += text + '\n';
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(this.flushNow);
    }
  }

  /** Writes what is queued now (at the turn's end, and before the transport closes). */
  flush(): void {
    this.scheduled = false;
    if (this.pending === '') return;
    const text = this.pending;
    this.pending = '';
    if (!this.output.destroyed) this.output.write(text);
  }

  /** Drops what is queued (the peer stopped reading: nothing more goes to it). */
  drop(): void {
    this.pending = '';
  }
}
