/**
 * The bus between the `--workers` of one machine: each worker sends its messages to the cluster
 * primary over the IPC channel node:cluster already keeps, and the primary relays them to every
 * other worker. Nothing to install; the primary does no other work, so the relay costs one IPC
 * hop each way. A message for one instance (`answers.<instance>`) goes to that worker alone,
 * named by the hello each worker sends first; to no one when no live worker is that instance.
 *
 * The messages a worker publishes in one turn of its event loop cross as one IPC message (a
 * batch), and the primary relays a batch as one message per receiving worker: each IPC message
 * costs a JSON encoding, a write system call and a parse on every hop, so a plugin's burst of
 * `mcp.resource_updated` (1000 at once under the default rate) took the publishing worker, the
 * primary and every other worker that many times, stalling their other clients on a loaded
 * machine (test/reliability/resource-update-flood). Order per publisher is kept.
 */
import type { Worker } from 'node:cluster';
import { HandlerTable, checkChannel, type BusHandler, type MessageBus } from './bus.js';
import { newInstanceId } from './local-bus.js';
import { addresseeOf } from './topics.js';

/** The envelope on the IPC channel; the tag keeps it apart from node:cluster's own messages. */
interface Envelope {
  moonhubBus: 1;
  c: string;
  d: unknown;
  o: string;
  /** Set by `publishConfirmed`: the primary answers with an `Ack` of this number once relayed. */
  a?: number;
}

/** Envelopes published in one turn, in order (`MAX_BATCH` at most). */
interface Batch {
  moonhubBusBatch: Envelope[];
}

/** The primary's acknowledgements of the confirmed messages of one batch, in order. */
interface Ack {
  moonhubBusAck: number[];
}

/** A turn's batch is sent early at this many messages: no IPC message grows without bound. */
const MAX_BATCH = 256;

/** A worker's first message: the instance id it uses on the bus. */
interface Hello {
  moonhubBusHello: string;
}

/** How long a worker waits for the primary's acknowledgement of a relayed message. */
const ACK_TIMEOUT_MS = 2000;

function isEnvelope(m: unknown): m is Envelope {
  return (
    typeof m === 'object' &&
    m !== null &&
    (m as Envelope).moonhubBus === 1 &&
    typeof (m as Envelope).c === 'string' &&
    typeof (m as Envelope).o === 'string'
  );
}

/** The envelopes of an IPC message: one, a batch, or none (not a bus message). */
function envelopesOf(m: unknown): Envelope[] {
  if (isEnvelope(m)) return [m];
  const batch = (m as Batch | null)?.moonhubBusBatch;
  return Array.isArray(batch) ? batch.filter(isEnvelope) : [];
}

/** One IPC message for `list` (non-empty): the envelope alone, or a batch. */
function packed(list: Envelope[]): Envelope | Batch {
  return list.length === 1 ? list[0]! : { moonhubBusBatch: list };
}

/** The worker's side. Needs a process started by node:cluster (or any fork with IPC). */
export class IpcBus implements MessageBus {
  readonly kind = 'ipc' as const;
  private readonly table: HandlerTable;
  private readonly onMessage = (m: unknown) => {
    const acked = (m as Ack | null)?.moonhubBusAck;
    if (Array.isArray(acked)) {
      for (const n of acked) {
        const done = this.acks.get(n);
        this.acks.delete(n);
        done?.(undefined);
      }
      return;
    }
    for (const e of envelopesOf(m)) if (e.o !== this.instanceId) this.table.deliver(e.c, e.d, e.o);
  };
  private closed = false;
  private nextAck = 0;
  private readonly acks = new Map<number, (err: Error | undefined) => void>();
  /** This turn's envelopes for the primary, sent together by `flush`. */
  private outbox: Envelope[] = [];
  private flushing: NodeJS.Immediate | undefined;
  private readonly flush = (): void => {
    if (this.flushing !== undefined) clearImmediate(this.flushing);
    this.flushing = undefined;
    const list = this.outbox;
    if (list.length === 0) return;
    this.outbox = [];
    if (process.connected) process.send!(packed(list));
  };

  constructor(
    readonly instanceId: string = newInstanceId(),
    onError: (err: unknown, channel: string) => void = () => {},
  ) {
    if (typeof process.send !== 'function')
      throw new Error('the IPC bus needs a process started by node:cluster (no IPC channel)');
    this.table = new HandlerTable(onError);
    process.on('message', this.onMessage);
    // Before any message of ours: the primary knows which worker an addressed message is for.
    process.send({ moonhubBusHello: instanceId } satisfies Hello);
  }

  get live(): boolean {
    return !this.closed && process.connected;
  }

  publish(channel: string, data: unknown): void {
    this.send(channel, data, undefined);
  }

  publishConfirmed(channel: string, data: unknown): Promise<void> {
    if (this.closed || !process.connected)
      return Promise.reject(new Error('the IPC bus is closed'));
    const n = ++this.nextAck;
    return new Promise<void>((resolve, reject) => {
      // The primary relays synchronously; no answer means it is gone or stalled.
      const timer = setTimeout(() => {
        this.acks.delete(n);
        reject(
          new Error(`the cluster primary did not relay a bus message within ${ACK_TIMEOUT_MS} ms`),
        );
      }, ACK_TIMEOUT_MS);
      timer.unref();
      this.acks.set(n, (err) => {
        clearTimeout(timer);
        if (err === undefined) resolve();
        else reject(err);
      });
      this.send(channel, data, n);
    });
  }

  /** Subscriptions are local to the worker: the primary relays every message. */
  async ready(): Promise<void> {}

  onGap(fn: () => void): () => void {
    // A worker whose primary is gone exits; until then it may have missed messages.
    process.on('disconnect', fn);
    return () => void process.off('disconnect', fn);
  }

  private send(channel: string, data: unknown, ack: number | undefined): void {
    checkChannel(channel);
    if (this.closed) return;
    const env: Envelope = { moonhubBus: 1, c: channel, d: data, o: this.instanceId };
    if (ack !== undefined) env.a = ack;
    // Serialized now, as the other processes will see it; our own handlers get the same copy.
    const copy = data === undefined ? undefined : (JSON.parse(JSON.stringify(data)) as unknown);
    queueMicrotask(() => this.table.deliver(channel, copy, this.instanceId));
    this.outbox.push(env);
    if (this.outbox.length >= MAX_BATCH) this.flush();
    else this.flushing ??= setImmediate(this.flush);
  }

  subscribe(channel: string, handler: BusHandler): () => void {
    const { remove } = this.table.add(channel, handler);
    return () => void remove();
  }

  async close(): Promise<void> {
    // What was published before closing still leaves, as it did when each message left at once.
    this.flush();
    this.closed = true;
    process.off('message', this.onMessage);
    for (const done of this.acks.values()) done(new Error('the IPC bus is closed'));
    this.acks.clear();
  }
}

/**
 * The primary's side: relays each worker's bus messages to every other live worker, or to the
 * one worker a message is addressed to. `add` each forked worker once.
 */
export class BusRelay {
  /** Live workers by the instance id each announced. */
  private readonly byInstance = new Map<string, Worker>();

  constructor(private readonly workers: () => Iterable<Worker>) {}

  add(worker: Worker): void {
    let instance: string | undefined;
    worker.on('message', (m: unknown) => {
      const hello = (m as Hello | null)?.moonhubBusHello;
      if (typeof hello === 'string') {
        instance = hello;
        this.byInstance.set(hello, worker);
      } else {
        const list = envelopesOf(m);
        if (list.length > 0) this.relay(worker, list);
      }
    });
    worker.on('exit', () => {
      if (instance !== undefined && this.byInstance.get(instance) === worker)
        this.byInstance.delete(instance);
    });
  }

  /** Relays one worker's envelopes: one IPC message per receiving worker, order kept. */
  private relay(from: Worker, list: Envelope[]): void {
    const out = new Map<Worker, Envelope[]>();
    const to = (w: Worker | undefined, m: Envelope) => {
      if (w === undefined || w === from || !w.isConnected()) return;
      const mine = out.get(w);
      if (mine === undefined) out.set(w, [m]);
      else mine.push(m);
    };
    const acks: number[] = [];
    for (const m of list) {
      const addressee = addresseeOf(m.c);
      if (addressee === undefined) for (const other of this.workers()) to(other, m);
      else to(this.byInstance.get(addressee), m);
      if (m.a !== undefined) acks.push(m.a);
    }
    for (const [w, mine] of out) w.send(packed(mine));
    // Handed to every other worker's channel before the publisher hears back (publishConfirmed).
    if (acks.length > 0 && from.isConnected()) from.send({ moonhubBusAck: acks } satisfies Ack);
  }
}
