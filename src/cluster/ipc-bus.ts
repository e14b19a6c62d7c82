/**
 * The bus between the `--workers` of one machine: each worker sends its messages to the cluster
 * primary over the IPC channel node:cluster already keeps, and the primary relays them to every
 * other worker. Nothing to install; the primary does no other work, so the relay costs one IPC
 * hop each way.
 */
import type { Worker } from 'node:cluster';
import { HandlerTable, checkChannel, type BusHandler, type MessageBus } from './bus.js';
import { newInstanceId } from './local-bus.js';

/** The envelope on the IPC channel; the tag keeps it apart from node:cluster's own messages. */
interface Envelope {
  moonhubBus: 1;
  c: string;
  d: unknown;
  o: string;
}

function isEnvelope(m: unknown): m is Envelope {
  return (
    typeof m === 'object' &&
    m !== null &&
    (m as Envelope).moonhubBus === 1 &&
    typeof (m as Envelope).c === 'string' &&
    typeof (m as Envelope).o === 'string'
  );
}

/** The worker's side. Needs a process started by node:cluster (or any fork with IPC). */
export class IpcBus implements MessageBus {
  readonly kind = 'ipc' as const;
  private readonly table: HandlerTable;
  private readonly onMessage = (m: unknown) => {
    if (isEnvelope(m) && m.o !== this.instanceId) this.table.deliver(m.c, m.d, m.o);
  };
  private closed = false;

  constructor(
    readonly instanceId: string = newInstanceId(),
    onError: (err: unknown, channel: string) => void = () => {},
  ) {
    if (typeof process.send !== 'function')
      throw new Error('the IPC bus needs a process started by node:cluster (no IPC channel)');
    this.table = new HandlerTable(onError);
    process.on('message', this.onMessage);
  }

  publish(channel: string, data: unknown): void {
    checkChannel(channel);
    if (this.closed) return;
    const env: Envelope = { moonhubBus: 1, c: channel, d: data, o: this.instanceId };
    // Serialized now, as the other processes will see it; our own handlers get the same copy.
    const copy = data === undefined ? undefined : (JSON.parse(JSON.stringify(data)) as unknown);
    queueMicrotask(() => this.table.deliver(channel, copy, this.instanceId));
    if (process.connected) process.send!(env);
  }

  subscribe(channel: string, handler: BusHandler): () => void {
    const { remove } = this.table.add(channel, handler);
    return () => void remove();
  }

  async close(): Promise<void> {
    this.closed = true;
    process.off('message', this.onMessage);
  }
}

/**
 * The primary's side: relays each worker's bus messages to every other live worker. Call it
 * once per forked worker. Returns the number of messages relayed so far (for tests and logs).
 */
export function relayBus(worker: Worker, workers: () => Iterable<Worker>): void {
  worker.on('message', (m: unknown) => {
    if (!isEnvelope(m)) return;
    for (const other of workers()) {
      if (other === worker || !other.isConnected()) continue;
      other.send(m);
    }
  });
}
