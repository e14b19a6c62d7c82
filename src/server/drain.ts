/**
 * Graceful shutdown's bookkeeping: the requests a dispatcher is answering now, so `serve` can
 * stop taking new ones, wait for these to answer (up to a deadline), and then answer those still
 * running with the registered `drain_deadline` error. Transport-independent: HTTP and stdio wrap
 * their dispatcher with it; what "stop accepting" means on the wire is each transport's.
 */
import { localError, wireError } from '../errors.js';
import type { RequestChannel } from './channel.js';
import type { McpDispatcher } from './dispatcher.js';
import { IdTable } from '../id-table.js';
import { serializeWireError, type JsonRpcId } from './jsonrpc.js';

interface Pending {
  readonly id: JsonRpcId;
  readonly channel: RequestChannel | undefined;
  /** Answers the request now, in place of its handler (whose later answer is dropped). */
  readonly cut: (json: string) => void;
}

export interface DrainOutcome {
  /** Requests that answered on their own while draining. */
  finished: number;
  /** Requests answered with `drain_deadline` (and aborted) at the deadline. */
  aborted: number;
}

export class Drain {
  /** Not a Set: entries live a request each and hold it (id-table.ts). */
  private readonly pending = new IdTable<Pending, number>();
  private nextId = 0;
  private idle: (() => void) | undefined;
  private started = 0;
  private draining = false;

  /** True once `begin()` ran: transports refuse new requests. */
  get active(): boolean {
    return this.draining;
  }

  get inflight(): number {
    return this.pending.size;
  }

  /**
   * The dispatcher with its requests tracked; after `begin()` new ones get `shutting_down`,
   * counted by `refused` (the metrics' refusal counter) like every other refusal.
   */
  wrap(inner: McpDispatcher, refused?: (limit: string) => void): McpDispatcher {
    const handleRequest: McpDispatcher['handleRequest'] = (msg, scope, channel) => {
      if (this.draining) {
        refused?.('shutting_down');
        return Promise.resolve(serializeWireError(msg.id, wireError('shutting_down')));
      }
      return new Promise<string>((resolve) => {
        let done = false;
        const answer = (json: string) => {
          if (done) return;
          done = true;
          this.pending.delete(key);
          resolve(json);
          if (this.pending.size === 0) this.idle?.();
        };
        const key = this.nextId++;
        this.pending.set(key, { id: msg.id, channel, cut: answer });
        // A rejected answer would be an unhandled rejection (the process ends) and a request
        // never answered: it is answered internal_error instead.
        inner
          .handleRequest(msg, scope, channel)
          .then(answer, () => answer(serializeWireError(msg.id, wireError('internal_error'))));
      });
    };
    return Object.create(inner, {
      handleRequest: { value: handleRequest },
    }) as McpDispatcher;
  }

  /** Stops taking requests; those in flight go on. */
  begin(): void {
    if (this.draining) return;
    this.draining = true;
    this.started = this.pending.size;
    // Their answers say `Connection: close`, so no client reuses a connection about to close.
    for (const p of this.pending.values()) p.channel?.lastOnConnection();
  }

  /**
   * Waits until every tracked request has answered or `deadlineMs` passed; then answers the
   * rest with `drain_deadline` and aborts their handlers (so upstream calls and plugin code stop).
   */
  async settle(deadlineMs: number): Promise<DrainOutcome> {
    this.begin();
    if (this.pending.size > 0) {
      let timer: NodeJS.Timeout | undefined;
      await new Promise<void>((resolve) => {
        this.idle = resolve;
        timer = setTimeout(resolve, deadlineMs);
      });
      clearTimeout(timer);
      this.idle = undefined;
    }
    const late = [...this.pending.values()];
    for (const p of late) {
      p.cut(serializeWireError(p.id, wireError('drain_deadline', { ms: deadlineMs })));
      p.channel?.abort(localError('shutdown'));
    }
    // Let the transports write the answers they were just handed before streams close.
    await new Promise((r) => setImmediate(r));
    return { finished: this.started - late.length, aborted: late.length };
  }
}
