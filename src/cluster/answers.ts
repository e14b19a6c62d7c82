/**
 * Server-to-client requests (sampling, elicitation, roots) whose answer may land on another
 * instance than the call waiting for it. The id of each request names its instance and carries a
 * tag (`moonhub-<instance>-<n>-<tag>`, the tag an HMAC of instance, number and session under the
 * cluster's answer key); whichever instance receives the client's answer settles it when it is
 * its own, or forwards it on the bus to the owner's `answers.<instance>` channel. The owner
 * accepts an answer only for a request it is waiting on, from the session it asked.
 *
 * Forwarding costs the cluster a copy of the answer per hop, so only answers that may be awaited
 * cross: an id whose tag does not check (a forged id, or another session's) is refused where it
 * lands, like a local unknown answer; each id is forwarded once per receiving instance; and an
 * answer larger than `maxForwardBytes` crosses as an error that fails the waiting call at once.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { MessageBus } from './bus.js';
import { channels } from './topics.js';
import { INVALID_PARAMS } from '../errors.js';

/** The tag: 128 bits of HMAC-SHA256, 22 characters of base64url. */
const TAG_BYTES = 16;
const ID = /^moonhub-([A-Za-z0-9]{1,32})-(\d{1,15})-([A-Za-z0-9_-]{22})$/;

/**
 * Default `maxForwardBytes`: the HTTP body limit (`server/protocol.ts` DEFAULT_MAX_BODY_BYTES,
 * 4 MiB; cluster/ does not import server/, test/cluster/bus.test checks they agree), so an answer
 * one process accepts also crosses to another: a client sees no smaller limit because the hub
 * runs several. Under Redis's default pub/sub output buffer (8 MiB soft, 32 MiB hard).
 */
export const DEFAULT_MAX_FORWARD_BYTES = 4 * 1024 * 1024;

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
  /**
   * Bytes of an answer's JSON forwarded to another instance (default 4 MiB); a larger one
   * crosses as an error naming the bound, so its call fails at once instead of timing out.
   */
  maxForwardBytes?: number;
}

export class AnswerRouter {
  private readonly pending = new Map<string, Pending>();
  private next = 0;
  private readonly unsubscribe: () => void;
  private readonly timeoutMs: number;
  private readonly maxPending: number;
  private readonly maxForwardBytes: number;
  /** Ids forwarded from here (oldest first, at most `maxPending`): each crosses once. */
  private readonly forwarded = new Set<string>();
  /** The key tags are made with, and the one before it (Redis: a key lost and made again). */
  private keys: Buffer[];
  /** Others sealing with the shared key (2026-07-28 request states): told when it changes. */
  private readonly keyWatchers: ((key: Buffer) => void)[] = [];

  constructor(
    private readonly bus: MessageBus,
    opts: AnswerRouterOptions = {},
    /** The cluster's answer key (every instance must share it); random: this process alone. */
    key: Uint8Array = randomBytes(32),
  ) {
    this.timeoutMs = opts.timeoutMs ?? 5 * 60_000;
    this.maxPending = opts.maxPending ?? 10_000;
    this.maxForwardBytes = opts.maxForwardBytes ?? DEFAULT_MAX_FORWARD_BYTES;
    this.keys = [Buffer.from(key)];
    this.unsubscribe = bus.subscribe(channels.answers(bus.instanceId), (d) => {
      const f = d as Forwarded;
      if (typeof f?.id === 'string' && typeof f.session === 'string')
        this.settle(f.id, f.session, { message: f.message ?? {} });
    });
  }

  get size(): number {
    return this.pending.size;
  }

  /** The key new ids are tagged with. */
  get key(): Buffer {
    return this.keys[0]!;
  }

  /** A new answer key: new ids are tagged with it; tags of the previous one still check. */
  rekey(key: Uint8Array): void {
    if (this.keys[0]!.equals(key)) return;
    this.keys = [Buffer.from(key), this.keys[0]!];
    for (const watch of this.keyWatchers) watch(this.keys[0]!);
  }

  /** Calls `watch` with the shared key now and whenever it changes. */
  watchKey(watch: (key: Buffer) => void): void {
    this.keyWatchers.push(watch);
    watch(this.keys[0]!);
  }

  private tag(key: Buffer, instance: string, n: string, session: string): string {
    return createHmac('sha256', key)
      .update(`${instance}-${n}-${session}`)
      .digest()
      .subarray(0, TAG_BYTES)
      .toString('base64url');
  }

  /**
   * Whether `tag` was made by an instance of this cluster for this session's request. Compared
   * as text: another spelling of the same bits (base64's spare bits) would be another id.
   */
  private checks(instance: string, n: string, session: string, tag: string): boolean {
    const given = Buffer.from(tag);
    return this.keys.some((k) =>
      timingSafeEqual(given, Buffer.from(this.tag(k, instance, n, session))),
    );
  }

  /** A new request id and the promise of its answer, for a request sent to `session`'s client. */
  open(session: string, signal?: AbortSignal): { id: string; answer: Promise<ClientAnswer> } {
    if (this.pending.size >= this.maxPending)
      throw new Error(`too many requests waiting for a client's answer (${this.maxPending})`);
    const n = String(++this.next);
    const tag = this.tag(this.keys[0]!, this.bus.instanceId, n, session);
    const id = `moonhub-${this.bus.instanceId}-${n}-${tag}`;
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
   * or 'unknown' (not an id made for this session, or none of ours is waiting for it, or one
   * forwarded already).
   */
  deliver(
    id: unknown,
    session: string,
    message: ClientAnswer['message'],
  ): 'settled' | 'forwarded' | 'unknown' {
    if (typeof id !== 'string') return 'unknown';
    const m = ID.exec(id);
    if (m === null || !this.checks(m[1]!, m[2]!, session, m[3]!)) return 'unknown';
    if (m[1] === this.bus.instanceId)
      return this.settle(id, session, { message }) ? 'settled' : 'unknown';
    // A replayed answer would cost the owner's instance a copy each time: one crosses.
    if (this.forwarded.has(id)) return 'unknown';
    if (this.forwarded.size >= this.maxPending)
      this.forwarded.delete(this.forwarded.values().next().value!);
    this.forwarded.add(id);
    const f: Forwarded = { id, session, message: this.bounded(message) };
    this.bus.publish(channels.answers(m[1]!), f);
    return 'forwarded';
  }

  /** The answer, or the error that stands for it when it is too large to forward. */
  private bounded(message: ClientAnswer['message']): ClientAnswer['message'] {
    const bytes = Buffer.byteLength(JSON.stringify(message) ?? '');
    if (bytes <= this.maxForwardBytes) return message;
    return {
      error: {
        code: INVALID_PARAMS,
        message: `the client's answer (${bytes} bytes) is larger than ${this.maxForwardBytes} bytes, the most another instance is sent (cluster.limits.max_forwarded_answer_bytes; raise it to forward larger answers)`,
      },
    };
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
