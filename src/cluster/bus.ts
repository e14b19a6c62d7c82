/**
 * The message bus: how one hub process tells the others what a single process keeps in memory
 * (list and view changes, resource updates, messages for a client's stream, a client's answers,
 * revocations). One small interface, three carriers: in-process (`local-bus.ts`), between the
 * `--workers` of one machine through the cluster primary (`ipc-bus.ts`), and Redis pub/sub across
 * machines (`redis-bus.ts`).
 *
 * Delivery contract, the same for every carrier: a message published on a channel reaches every
 * handler of that channel in every process of the hub exactly once, the publisher's own handlers
 * included (locally, without a round trip), in publication order per publisher. Delivery is at
 * most once: a process that is disconnected when a message passes misses it (the stores hold
 * what must survive that). Payloads are JSON values.
 */

export type BusHandler = (data: unknown, origin: string) => void;

export interface MessageBus {
  /** This process's id on the bus (also the owner part of the ids it makes). */
  readonly instanceId: string;
  /** Which carrier: 'local', 'ipc' or 'redis'. */
  readonly kind: 'local' | 'ipc' | 'redis';
  publish(channel: string, data: unknown): void;
  /**
   * Publishes, and resolves once every other process has been handed the message (Redis has
   * answered the PUBLISH; the primary has relayed it): a change announced this way before a
   * client is answered reaches the other processes before that client's next request can.
   * Rejects when the carrier is down (the message may be lost).
   */
  publishConfirmed(channel: string, data: unknown): Promise<void>;
  /**
   * False while this process may be missing messages (its Redis subscriber connection is
   * down): caches kept fresh by the bus must not be trusted then.
   */
  readonly live: boolean;
  /** Calls `fn` whenever messages may have been missed (a lost or regained connection). */
  onGap(fn: () => void): () => void;
  /** Resolves once every subscription made so far is in effect (Redis has confirmed it). */
  ready(): Promise<void>;
  /** Returns the function that removes this handler. */
  subscribe(channel: string, handler: BusHandler): () => void;
  close(): Promise<void>;
}

/** A channel is a short printable name; anything else is a programming error. */
const CHANNEL = /^[A-Za-z0-9_.:-]{1,200}$/;

export function checkChannel(channel: string): void {
  if (!CHANNEL.test(channel)) throw new Error(`bad bus channel name: ${JSON.stringify(channel)}`);
}

/**
 * The handlers of one process, by channel; every carrier delivers through one of these. A
 * throwing handler is reported and does not stop the others.
 */
export class HandlerTable {
  private readonly byChannel = new Map<string, Set<BusHandler>>();

  constructor(private readonly onError: (err: unknown, channel: string) => void) {}

  /** Adds a handler; `first` is true when the channel had none (a carrier subscribes then). */
  add(channel: string, handler: BusHandler): { first: boolean; remove: () => boolean } {
    checkChannel(channel);
    let set = this.byChannel.get(channel);
    const first = set === undefined;
    if (set === undefined) this.byChannel.set(channel, (set = new Set()));
    const entry: BusHandler = (d, o) => handler(d, o); // one entry per subscribe call
    set.add(entry);
    return {
      first,
      // true when the channel has no handler left (a carrier unsubscribes then).
      remove: () => {
        const s = this.byChannel.get(channel);
        if (s === undefined || !s.delete(entry)) return false;
        if (s.size > 0) return false;
        this.byChannel.delete(channel);
        return true;
      },
    };
  }

  has(channel: string): boolean {
    return this.byChannel.has(channel);
  }

  channels(): string[] {
    return [...this.byChannel.keys()];
  }

  deliver(channel: string, data: unknown, origin: string): void {
    const set = this.byChannel.get(channel);
    if (set === undefined) return;
    for (const h of [...set]) {
      try {
        h(data, origin);
      } catch (err) {
        this.onError(err, channel);
      }
    }
  }
}
