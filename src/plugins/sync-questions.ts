/**
 * The hub's side of a plugin worker's synchronous questions (src/plugins/remote-registry.ts):
 * the worker blocks in `Atomics.wait` until the answer is posted and the flag set. Its messages
 * and its questions travel on different ports, which keep no order between them, so a question
 * is answered only once the messages the worker posted before it are handled here (the worker
 * waits meanwhile, so at most one question is ever waiting). It also publishes how many of the
 * worker's messages were handled, which bounds the worker's backlog (sync-flag.ts).
 */
import type { MessagePort } from 'node:worker_threads';
import type { SyncRequest } from './worker-protocol.js';
import { ANSWER, CLOSED, HANDLED, publishHandled, type SyncReply } from './sync-flag.js';

export interface SyncAnswerer {
  answerSync(req: SyncRequest): unknown;
}

export class SyncQuestions {
  /** The worker's messages handled so far. */
  private received = 0;
  private waiting: SyncRequest | undefined;
  private closed = false;

  constructor(
    private readonly port: MessagePort,
    private readonly flag: Int32Array,
    private readonly answerer: SyncAnswerer,
  ) {
    port.on('message', (req: SyncRequest) => {
      if (req.after > this.received) this.waiting = req;
      else this.answer(req);
    });
    port.unref();
  }

  /** One more of the worker's messages was handled: a question waiting for it is answered. */
  handled(): void {
    this.received++;
    // The worker reads it to bound what it has posted and we have not handled (sync-flag.ts).
    publishHandled(this.flag, this.received);
    const req = this.waiting;
    if (req === undefined || req.after > this.received) return;
    this.waiting = undefined;
    this.answer(req);
  }

  /**
   * The hub stops serving this worker (unload, reload, hard stop). An answer posted on the closed
   * port would be dropped while the flag still woke the worker, which then found no answer ("the
   * hub's answer ... was lost"): the worker is told instead, and stops waiting.
   */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.waiting = undefined;
    this.port.close();
    Atomics.store(this.flag, CLOSED, 1);
    Atomics.notify(this.flag, ANSWER);
    Atomics.notify(this.flag, HANDLED);
  }

  private answer(req: SyncRequest): void {
    if (this.closed) return;
    let reply: SyncReply;
    try {
      reply = { seq: req.seq, ok: true, value: this.answerer.answerSync(req) };
    } catch (err) {
      reply = { seq: req.seq, ok: false, error: (err as Error).message };
    }
    this.port.postMessage(reply);
    Atomics.store(this.flag, ANSWER, 1);
    Atomics.notify(this.flag, ANSWER);
  }
}
