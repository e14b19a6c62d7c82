/**
 * Messages between the hub's thread and a plugin's worker, sent once per event-loop turn: every
 * message posted during a turn goes in one `postMessage` at its end (a `setImmediate`), in
 * order (a message that must not wait goes at once, with those queued before it). One `postMessage` costs tens of µs under load (the copy, and waking the other thread),
 * and was the largest single item of the Lua echo call in the profile; with 50 calls in flight,
 * several arrive and finish per turn and now share it. A lone message goes as itself.
 */

/** What goes on the port for a turn with more than one message. */
export interface MessageBundle<T> {
  type: 'bundle';
  messages: T[];
}

export function isBundle<T>(msg: T | MessageBundle<T>): msg is MessageBundle<T> {
  return (msg as { type?: unknown }).type === 'bundle';
}

export interface BatchTarget {
  postMessage(value: unknown): void;
}

export class MessageBatch<T> {
  private queue: T[] = [];
  private scheduled = false;
  private readonly flushNow = (): void => this.flush();

  /**
   * `onUncloneable`: a message that cannot be copied (a value with a function in it); called
   * for each such message after the others of its turn were sent one by one.
   */
  constructor(
    private readonly target: BatchTarget,
    private readonly onUncloneable: (msg: T, err: Error) => void,
  ) {}

  /** Queues `msg`; `now`: send it (and what is queued before it) at once. */
  post(msg: T, now = false): void {
    this.queue.push(msg);
    if (now) return this.flush();
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(this.flushNow);
    }
  }

  /** Sends what is queued now (before a synchronous question, a close, or at the turn's end). */
  flush(): void {
    this.scheduled = false;
    const q = this.queue;
    if (q.length === 0) return;
    this.queue = [];
    try {
      this.target.postMessage(
        q.length === 1 ? q[0] : ({ type: 'bundle', messages: q } satisfies MessageBundle<T>),
      );
    } catch {
      // One message of the turn could not be copied: the others still go, each on its own.
      for (const msg of q) {
        try {
          this.target.postMessage(msg);
        } catch (err) {
          this.onUncloneable(msg, err as Error);
        }
      }
    }
  }
}
