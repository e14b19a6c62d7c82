/**
 * The hub's side of a plugin worker's synchronous questions (src/plugins/remote-registry.ts):
 * the worker blocks in `Atomics.wait` until the answer is posted and the flag set. Its messages
 * and its questions travel on different ports, which keep no order between them, so a question
 * is answered only once the messages the worker posted before it are handled here (the worker
 * waits meanwhile, so at most one question is ever waiting).
 */
import type { MessagePort } from 'node:worker_threads';
import type { SyncRequest } from './worker-protocol.js';

export interface SyncAnswerer {
  answerSync(req: SyncRequest): unknown;
}

export class SyncQuestions {
  /** The worker's messages handled so far. */
  private received = 0;
  private waiting: SyncRequest | undefined;

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
    // The worker reads it to bound what it has posted and we have not handled (plugin-worker.ts).
    Atomics.store(this.flag, 1, this.received);
    const req = this.waiting;
    if (req === undefined || req.after > this.received) return;
    this.waiting = undefined;
    this.answer(req);
  }

  private answer(req: SyncRequest): void {
    let reply: { ok: boolean; value?: unknown; error?: string };
    try {
      reply = { ok: true, value: this.answerer.answerSync(req) };
    } catch (err) {
      reply = { ok: false, error: (err as Error).message };
    }
    this.port.postMessage(reply);
    Atomics.store(this.flag, 0, 1);
    Atomics.notify(this.flag, 0);
  }
}
