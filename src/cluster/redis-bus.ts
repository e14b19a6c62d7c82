/**
 * The bus across machines: Redis pub/sub. One connection publishes, one subscribes (a
 * subscribed Redis connection can do nothing else); channels are `<prefix>:bus:<channel>`, and a
 * channel is subscribed on Redis only while this process has a handler for it. Our own messages
 * come back from Redis and are dropped: the publisher's handlers got them locally already.
 */
import { HandlerTable, checkChannel, type BusHandler, type MessageBus } from './bus.js';
import { newInstanceId } from './local-bus.js';
import { closeRedis, connectRedis, type Redis } from './redis.js';

interface Envelope {
  o: string;
  d: unknown;
}

export interface RedisBusOptions {
  url: string;
  prefix: string;
  instanceId?: string;
  onError?: (err: unknown, channel: string) => void;
  commandTimeoutMs?: number | undefined;
}

export class RedisBus implements MessageBus {
  readonly kind = 'redis' as const;
  private readonly table: HandlerTable;
  private closed = false;
  private subscribed = true;
  private readonly gaps = new Set<() => void>();

  private constructor(
    readonly instanceId: string,
    private readonly pub: Redis,
    private readonly sub: Redis,
    private readonly prefix: string,
    private readonly onError: (err: unknown, channel: string) => void,
  ) {
    this.table = new HandlerTable(onError);
    sub.on('message', (full: string, text: string) => this.receive(full, text));
    // Messages published while the subscriber is away are lost (pub/sub keeps nothing): tell
    // the caches when it goes, and again once it is back and resubscribed.
    sub.on('close', () => {
      if (!this.subscribed) return;
      this.subscribed = false;
      this.gap();
    });
    sub.on('ready', () => {
      this.ready().then(
        () => {
          if (this.subscribed || this.closed) return;
          this.subscribed = true;
          this.gap();
        },
        (err: unknown) => onError(err, '(resubscribe)'),
      );
    });
  }

  get live(): boolean {
    return this.subscribed && !this.closed;
  }

  onGap(fn: () => void): () => void {
    this.gaps.add(fn);
    return () => void this.gaps.delete(fn);
  }

  private gap(): void {
    for (const fn of [...this.gaps]) {
      try {
        fn();
      } catch (err) {
        this.onError(err, '(gap)');
      }
    }
  }

  static async open(opts: RedisBusOptions): Promise<RedisBus> {
    const id = opts.instanceId ?? newInstanceId();
    const timeout = opts.commandTimeoutMs;
    const pub = await connectRedis(opts.url, {
      name: `moonhub-${id}-pub`,
      commandTimeoutMs: timeout,
    });
    let sub: Redis;
    try {
      sub = await connectRedis(opts.url, { name: `moonhub-${id}-sub`, commandTimeoutMs: timeout });
    } catch (err) {
      await closeRedis(pub);
      throw err;
    }
    return new RedisBus(id, pub, sub, `${opts.prefix}:bus:`, opts.onError ?? (() => {}));
  }

  private receive(full: string, text: string): void {
    if (!full.startsWith(this.prefix)) return;
    const channel = full.slice(this.prefix.length);
    let env: Envelope;
    try {
      env = JSON.parse(text) as Envelope;
    } catch (err) {
      this.onError(err, channel);
      return;
    }
    if (typeof env?.o !== 'string' || env.o === this.instanceId) return;
    this.table.deliver(channel, env.d, env.o);
  }

  publish(channel: string, data: unknown): void {
    this.send(channel, data)?.catch((err: unknown) => this.onError(err, channel));
  }

  async publishConfirmed(channel: string, data: unknown): Promise<void> {
    const sent = this.send(channel, data);
    if (sent === undefined) throw new Error('the Redis bus is closed');
    // Redis answers a PUBLISH after queueing the message to every subscriber.
    await sent;
  }

  private send(channel: string, data: unknown): Promise<number> | undefined {
    checkChannel(channel);
    if (this.closed) return undefined;
    const text = JSON.stringify({ o: this.instanceId, d: data } satisfies Envelope);
    const copy = data === undefined ? undefined : (JSON.parse(text) as Envelope).d;
    queueMicrotask(() => this.table.deliver(channel, copy, this.instanceId));
    return this.pub.publish(this.prefix + channel, text);
  }

  subscribe(channel: string, handler: BusHandler): () => void {
    const { first, remove } = this.table.add(channel, handler);
    if (first)
      this.sub.subscribe(this.prefix + channel).catch((err: unknown) => this.onError(err, channel));
    return () => {
      if (remove() && !this.closed)
        this.sub
          .unsubscribe(this.prefix + channel)
          .catch((err: unknown) => this.onError(err, channel));
    };
  }

  /** Resolves once Redis has confirmed every subscription made so far (tests, start-up). */
  async ready(): Promise<void> {
    const channels = this.table.channels().map((c) => this.prefix + c);
    if (channels.length > 0) await this.sub.subscribe(...channels);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.all([closeRedis(this.pub), closeRedis(this.sub)]);
  }
}
