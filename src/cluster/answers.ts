/**
 * Server-to-client requests (sampling, elicitation, roots) whose answer may land on another
 * instance than the call waiting for it. The id of each request names its instance
 * (`moonhub-<instance>-<n>`); whichever instance receives the client's answer settles it when
 * it is its own, or forwards it on the bus to the owner's `answers.<instance>` channel. The owner
 * accepts an answer only for a request it is waiting on, from the session it asked.
 */
import type { MessageBus } from './bus.js';
import { channels } from './topics.js';

const ID = /^moonhub-([A-Za-z0-9]{1,32})-(\d{1,15})$/;

export interface ClientAnswer {
  /** The JSON-RPC response as the client sent it (result or error). */
  message: { result?: unknown; error?: unknown };
}

interface Pending {
  session: string;
  resolve: (answer: ClientAnswer) => void;
  reject: (err: Error) => void;
  timer: NodeJS.Timeout;
}

interface Forwarded {
  id: string;
  session: string;
  message: ClientAnswer['message'];
}

export interface AnswerRouterOptions {
  /** How long a request waits for its answer (default 5 min; elicitation waits for a human). */
  timeoutMs?: number;
  /** Requests waiting at once on this instance; more are refused (default 10,000). */
  maxPending?: number;
}

export class AnswerRouter {
  private readonly pending = new Map<string, Pending>();
  private next = 0;
  private readonly unsubscribe: () => void;
  private readonly timeoutMs: number;
  private readonly maxPending: number;

  constructor(
    private readonly bus: MessageBus,
    opts: AnswerRouterOptions = {},
  ) {
    this.timeoutMs = opts.timeoutMs ?? 5 * 60_000;
    this.maxPending = opts.maxPending ?? 10_000;
    this.unsubscribe = bus.subscribe(channels.answers(bus.instanceId), (d) => {
      const f = d as Forwarded;
      if (typeof f?.id === 'string' && typeof f.session === 'string')
        this.settle(f.id, f.session, { message: f.message ?? {} });
    });
  }

  get size(): number {
    return this.pending.size;
  }

  /** A new request id and the promise of its answer, for a request sent to `session`'s client. */
  open(session: string, signal?: AbortSignal): { id: string; answer: Promise<ClientAnswer> } {
    if (this.pending.size >= this.maxPending)
      throw new Error(`too many requests waiting for a client's answer (${this.maxPending})`);
    const id = `moonhub-${this.bus.instanceId}-${++this.next}`;
    const answer = new Promise<ClientAnswer>((resolve, reject) => {
      const timer = setTimeout(
        () => this.fail(id, new Error(`no answer from the client in ${this.timeoutMs} ms`)),
        this.timeoutMs,
      );
      timer.unref();
      this.pending.set(id, { session, resolve, reject, timer });
      signal?.addEventListener('abort', () => this.fail(id, new Error('request cancelled')), {
        once: true,
      });
    });
    return { id, answer };
  }

  /**
   * A client's answer arrived here. Returns 'settled' (ours), 'forwarded' (another instance's)
   * or 'unknown' (not an id we make, or none of ours is waiting for it).
   */
  deliver(
    id: unknown,
    session: string,
    message: ClientAnswer['message'],
  ): 'settled' | 'forwarded' | 'unknown' {
    if (typeof id !== 'string') return 'unknown';
    const m = ID.exec(id);
    if (m === null) return 'unknown';
    if (m[1] === this.bus.instanceId)
      return this.settle(id, session, { message }) ? 'settled' : 'unknown';
    const f: Forwarded = { id, session, message };
    this.bus.publish(channels.answers(m[1]!), f);
    return 'forwarded';
  }

  private settle(id: string, session: string, answer: ClientAnswer): boolean {
    const p = this.pending.get(id);
    // Another session cannot answer a request it was not asked.
    if (p === undefined || p.session !== session) return false;
    this.pending.delete(id);
    clearTimeout(p.timer);
    p.resolve(answer);
    return true;
  }

  private fail(id: string, err: Error): void {
    const p = this.pending.get(id);
    if (p === undefined) return;
    this.pending.delete(id);
    clearTimeout(p.timer);
    p.reject(err);
  }

  /** Rejects every waiting request (the instance stops). */
  close(): void {
    this.unsubscribe();
    for (const id of [...this.pending.keys()]) this.fail(id, new Error('the hub is stopping'));
  }
}
