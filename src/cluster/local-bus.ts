/**
 * The in-process bus: one hub process, nothing to share. Delivery is asynchronous (a microtask
 * later) like the other carriers, so code written against it behaves the same on them.
 */
import { randomBytes } from 'node:crypto';
import { HandlerTable, checkChannel, type BusHandler, type MessageBus } from './bus.js';

export function newInstanceId(): string {
  return randomBytes(6).toString('hex');
}

export class LocalBus implements MessageBus {
  readonly kind = 'local' as const;
  private readonly table: HandlerTable;
  private closed = false;

  constructor(
    readonly instanceId: string = newInstanceId(),
    onError: (err: unknown, channel: string) => void = () => {},
  ) {
    this.table = new HandlerTable(onError);
  }

  publish(channel: string, data: unknown): void {
    checkChannel(channel);
    if (this.closed) return;
    // A copy, as a carrier that serializes would give: handlers cannot share mutable state.
    const copy = data === undefined ? undefined : (JSON.parse(JSON.stringify(data)) as unknown);
    queueMicrotask(() => this.table.deliver(channel, copy, this.instanceId));
  }

  readonly live = true;

  async publishConfirmed(channel: string, data: unknown): Promise<void> {
    this.publish(channel, data);
  }

  async ready(): Promise<void> {}

  onGap(): () => void {
    return () => {}; // nothing can be missed in one process
  }

  subscribe(channel: string, handler: BusHandler): () => void {
    const { remove } = this.table.add(channel, handler);
    return () => void remove();
  }

  async close(): Promise<void> {
    this.closed = true;
  }
}
