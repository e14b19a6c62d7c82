/**
 * 2025 sessions served by every process of a cluster (`--workers N`, `cluster.redis`): the
 * in-process `LegacySessionStore` stays the place of a process's live sessions (its streams,
 * calls in flight), and this layer keeps them in step with the shared record store
 * (`cluster/session-records.ts`). A request naming a session another process opened adopts a
 * local copy from its record; what a request changes (initialize, log level, subscriptions) is
 * written back, and announced on the bus (`session_changed`), before it is answered. Each
 * process keeps its copies as a cache: a copy read since the last announcement of its session
 * serves requests without a read of the store, while the bus is live (a gap in the bus drops
 * every copy's freshness) and for `sessionCacheMs` at most. Used only in cluster modes: a single
 * process keeps the plain store and pays nothing for this.
 */
import type { ServerResponse } from 'node:http';
import { localError, wireError, WireError } from '../errors.js';
import type { MessageBus } from '../cluster/bus.js';
import type { ProtocolSessionRecord, SessionRecordStore } from '../cluster/session-records.js';
import { channels, onTopic, type TopicPayloads } from '../cluster/topics.js';
import type { LegacySessionStore } from './legacy-sessions.js';
import type { SharedStreams } from './shared-streams.js';
import { SessionFreshness } from './session-freshness.js';
import { SubscriberIndex } from './subscriber-index.js';
import type { SubscriptionBudget } from './subscription-budget.js';
import {
  newSessionState,
  resetSubscriptions,
  type PeerRouter,
  type SessionBus,
  type SessionLayer,
  type SessionRecord,
  type SharedSessions,
} from './session.js';

export interface SharedSessionOptions {
  records: SessionRecordStore;
  /** Resumable streams' events, kept for a resumption on another process. */
  streams: SharedStreams;
  bus: MessageBus;
  answers: PeerRouter;
  onError?: (err: unknown, where: string) => void;
  /** Counts a refusal by limit (the shared store's session bound is `sessions`). */
  refused?: (limit: string) => void;
}

/** What was last written to (or read from) the record, to write only what a request changed. */
interface Written {
  protocolVersion: string;
  logLevel: string | undefined;
  clientCapabilities: Record<string, unknown> | undefined;
  subscriptions: ReadonlySet<string>;
}

/** What a session's own channel carries: a message for its GET stream, wherever that is. */
type SessionMessage = { json: string };

export class SharedSessionLayer implements SessionLayer, SharedSessions {
  /** Local copies of sessions other processes opened (caches of their records). */
  private readonly adopted = new Map<string, SessionRecord>();
  /**
   * Resource URI → the adopted copies subscribed to it (the local store indexes its own), charged
   * to the local store's budget: a copy holds its URIs in this process too.
   */
  private readonly adoptedSubscribers: SubscriberIndex<SessionRecord>;
  private readonly written = new WeakMap<SessionRecord, Written>();
  private readonly sweeper: NodeJS.Timeout;
  private readonly busyToucher: NodeJS.Timeout;
  /** Which copies match their records (served without a read). */
  private readonly fresh: SessionFreshness;
  private readonly unlisten: () => void;

  constructor(
    private readonly local: LegacySessionStore,
    private readonly opts: SharedSessionOptions,
  ) {
    this.adoptedSubscribers = new SubscriberIndex(local.subscriptionBudget);
    const every = Math.max(50, Math.min(60_000, Math.floor(local.idleTimeoutMs / 2)));
    this.sweeper = setInterval(() => this.sweepAdopted(Date.now()), every);
    this.sweeper.unref();
    // A call in flight is activity the shared store cannot see: touch its record well within
    // the evict age, so another process never ends a session whose call is running.
    const busyEvery = Math.max(100, Math.floor(local.limits.sessionEvictIdleMs / 4));
    this.busyToucher = setInterval(() => this.touchBusy(), busyEvery);
    this.busyToucher.unref();
    this.unlisten = onTopic(opts.bus, 'session_changed', (m, origin) => this.onChanged(m, origin));
    this.fresh = new SessionFreshness(
      opts.bus,
      opts.records.limits.sessionCacheMs,
      2 * local.maxSessions,
      (err) => opts.onError?.(err, 'session cache (bus subscription)'),
    );
  }

  get shared(): SharedSessions {
    return this;
  }

  get size(): number {
    return this.local.size + this.adopted.size;
  }

  get maxSessions(): number {
    return this.local.maxSessions;
  }

  get subscriptionBudget(): SubscriptionBudget {
    return this.local.subscriptionBudget;
  }

  readonly bus: SessionBus = {
    send: (session, json) => {
      if (this.local.bus.send(session, json)) return true;
      // The stream may be held by another process: it hears the session's channel.
      this.opts.bus.publish(channels.session(session.id), { json });
      return true;
    },
    resourceUpdated: (uri, json) => {
      // Every process replays the update (registry bridge); each tells the streams it holds.
      this.local.bus.resourceUpdated(uri, json);
      const subscribers = this.adoptedSubscribers.of(uri);
      if (subscribers === undefined) return;
      let note: string | undefined;
      for (const s of subscribers) if (s.stream !== undefined) s.stream.send((note ??= json()));
    },
  };

  create(principal: string | undefined): SessionRecord | WireError | undefined {
    const s = this.local.create(principal);
    if (s !== undefined && !(s instanceof WireError)) {
      s.peerRouter = this.opts.answers;
      s.streamMirror = this.opts.streams.forSession(s.id);
    }
    return s;
  }

  touch(id: string): SessionRecord | undefined {
    const s = this.adopted.get(id);
    if (s === undefined) return this.local.touch(id);
    s.lastSeen = Date.now();
    return s;
  }

  *values(): IterableIterator<SessionRecord> {
    yield* this.local.values();
    yield* this.adopted.values();
  }

  delete(id: string): boolean {
    const here = this.forget(id);
    void this.drop(id);
    return here;
  }

  deleteWhere(pred: (s: SessionRecord) => boolean): number {
    const ids = [...this.values()].filter(pred).map((s) => s.id);
    for (const id of ids) this.delete(id);
    return ids.length;
  }

  closeAll(): void {
    clearInterval(this.sweeper);
    this.unlisten();
    this.fresh.close();
    this.opts.streams.close();
    clearInterval(this.busyToucher);
    this.local.closeAll();
    for (const s of this.adopted.values()) end(s);
    this.adopted.clear();
  }

  // ---- SharedSessions ----------------------------------------------------------------------

  async load(id: string): Promise<void> {
    let known = this.adopted.get(id) ?? this.local.touch(id);
    if (known !== undefined && this.fresh.isFresh(id)) {
      // An announcement is on the bus's socket before the client hears back, so before this
      // request arrives; but both can wake the process in one I/O turn, this request read
      // first. One turn later every announcement that preceded it has been heard.
      await ioTurn();
      known = this.adopted.get(id) ?? this.local.touch(id);
      if (known !== undefined && this.fresh.isFresh(id)) {
        // The hot path: nothing changed since the copy was read; only activity is recorded.
        known.lastSeen = Date.now();
        this.touchRecord(id);
        return;
      }
    }
    const token = this.fresh.begin();
    let rec: ProtocolSessionRecord | undefined;
    try {
      rec = await this.opts.records.get(id);
    } catch (err) {
      // The store unreachable: serve from what this process knows. A session it does not know
      // is not refused as unknown (the client would open a new one and lose this one): it is
      // told to retry, and the session is still there when the store answers again.
      this.opts.onError?.(err, 'session record read');
      if (known === undefined) throw wireError('session_store_unavailable');
      return;
    }
    const here = this.adopted.get(id) ?? this.local.touch(id);
    if (rec === undefined) {
      // Ended or expired elsewhere; a session still being initialized here has no record yet.
      if (here !== undefined && this.written.has(here)) this.forget(id);
      return;
    }
    const s = here ?? this.adopt(id);
    s.protocolVersion = rec.protocolVersion;
    s.principal = rec.principal;
    s.logLevel = rec.logLevel;
    s.clientCapabilities = rec.clientCapabilities;
    resetSubscriptions(s, rec.subscriptions);
    this.written.set(s, snapshot(s));
    // Fresh only if no change was announced while the read was under way.
    this.fresh.settle(id, token);
    this.touchRecord(id);
  }

  /** Cluster DELETE: ends the session here and everywhere, its record gone before the answer. */
  async end(id: string): Promise<boolean> {
    const here = this.forget(id);
    await this.drop(id);
    return here;
  }

  async commit(s: SessionRecord): Promise<WireError | undefined> {
    const before = this.written.get(s);
    const records = this.opts.records;
    if (before === undefined) {
      // The initialize of a session made here: its record, so every process can serve it.
      const now = Date.now();
      const limits = this.local.limits;
      const admitted = await records.admit(
        {
          id: s.id,
          protocolVersion: s.protocolVersion,
          ...(s.principal === undefined ? {} : { principal: s.principal }),
          ...(s.logLevel === undefined ? {} : { logLevel: s.logLevel }),
          ...(s.clientCapabilities === undefined
            ? {}
            : { clientCapabilities: s.clientCapabilities }),
          subscriptions: [...(s.subscriptions ?? [])],
          createdAt: now,
          lastSeen: now,
        },
        // limits.sessions.* hold cluster-wide here, not only in this process's own index.
        { perPrincipal: limits.sessionsPerPrincipal, evictIdleMs: limits.sessionEvictIdleMs },
      );
      if (!admitted.ok) {
        this.local.delete(s.id);
        this.opts.refused?.(admitted.limit);
        return admitted.limit === 'sessions'
          ? wireError('too_many_sessions', { max: records.limits.maxSessions })
          : wireError('sessions_per_principal', { max: limits.sessionsPerPrincipal });
      }
      // Sessions ended to make room: the processes holding one end its stream and calls.
      for (const id of admitted.evicted) {
        this.forget(id);
        await this.announce({ id, ended: true });
      }
      this.written.set(s, snapshot(s));
      this.fresh.written(s.id); // new: nobody else knows it
      return undefined;
    }
    let changed = false;
    const patch: Parameters<SessionRecordStore['update']>[1] = {};
    if (s.protocolVersion !== before.protocolVersion) patch.protocolVersion = s.protocolVersion;
    if (s.logLevel !== before.logLevel) patch.logLevel = s.logLevel ?? null;
    if (s.clientCapabilities !== before.clientCapabilities && s.clientCapabilities !== undefined)
      patch.clientCapabilities = s.clientCapabilities;
    if (Object.keys(patch).length > 0) {
      changed = true;
      await records.update(s.id, patch);
    }
    const now = s.subscriptions ?? new Set<string>();
    for (const uri of now) {
      if (before.subscriptions.has(uri)) continue;
      changed = true;
      // Past the store's bound the subscription is not kept anywhere, here included.
      if ((await records.subscribe(s.id, uri)) !== 'ok') now.delete(uri);
    }
    for (const uri of before.subscriptions) {
      if (now.has(uri)) continue;
      changed = true;
      await records.unsubscribe(s.id, uri);
    }
    if (!changed) return undefined; // the common case: a call changes nothing of the session
    this.written.set(s, snapshot(s));
    // Every other copy goes stale before the client hears back (its next request may land on
    // another process); the one holding the stream re-reads its subscriptions at once.
    await this.announce({ id: s.id });
    return undefined;
  }

  openStream(s: SessionRecord): () => void {
    const id = s.id;
    const off = this.opts.bus.subscribe(channels.session(id), (data) =>
      this.onSessionMessage(id, data as SessionMessage),
    );
    this.setOwner(id, this.opts.bus.instanceId);
    // An open stream is activity (as in one process): the record must not expire under it.
    const every = Math.max(1000, Math.floor(this.opts.records.limits.idleTimeoutMs / 3));
    const keepAlive = setInterval(() => {
      this.opts.records
        .touch(id)
        .catch((err: unknown) => this.opts.onError?.(err, 'session touch'));
    }, every);
    keepAlive.unref();
    return () => {
      clearInterval(keepAlive);
      off();
      this.setOwner(id, null);
    };
  }

  resume(
    res: ServerResponse,
    session: string,
    lastEventId: string,
    headers: Record<string, string>,
  ): Promise<WireError | undefined> {
    return this.opts.streams.resume(res, session, lastEventId, headers);
  }

  // ---- internals ---------------------------------------------------------------------------

  private adopt(id: string): SessionRecord {
    const s = newSessionState(id) as SessionRecord;
    s.initialized = true; // a record exists only for an initialized session
    s.lastSeen = Date.now();
    s.stream = undefined;
    s.peerRouter = this.opts.answers;
    s.streamMirror = this.opts.streams.forSession(id);
    s.subscribers = this.adoptedSubscribers;
    this.adopted.set(id, s);
    return s;
  }

  private onSessionMessage(id: string, m: SessionMessage): void {
    if (typeof m !== 'object' || m === null || typeof m.json !== 'string') return;
    const s = this.adopted.get(id) ?? this.local.touch(id);
    if (s?.stream !== undefined && !s.stream.closed) s.stream.send(m.json);
  }

  /** Another process changed or ended a session: this copy is stale, or ends. */
  private onChanged(m: TopicPayloads['session_changed'], origin: string): void {
    if (origin === this.opts.bus.instanceId) return; // our own change: our copy has it
    this.fresh.stale(m.id);
    if (m.ended === true) {
      this.forget(m.id);
      return;
    }
    // The stream held here tells resource updates by the subscriptions: re-read them now.
    const s = this.adopted.get(m.id) ?? this.local.peek(m.id);
    if (s?.stream !== undefined && !s.stream.closed) void this.load(m.id);
  }

  /** Announces a change before the client hears back; a bus failure costs freshness only. */
  private async announce(m: TopicPayloads['session_changed']): Promise<void> {
    try {
      await this.opts.bus.publishConfirmed('session_changed', m);
    } catch (err) {
      this.opts.onError?.(err, 'session change announcement');
    }
  }

  private touchRecord(id: string): void {
    // The stores thin these writes (one per session every few seconds at most).
    this.opts.records.touch(id).catch((err: unknown) => this.opts.onError?.(err, 'session touch'));
  }

  /** Ends this process's copy (its stream, its calls); true when it had one. */
  private forget(id: string): boolean {
    this.fresh.forget(id);
    const s = this.adopted.get(id);
    if (s === undefined) return this.local.delete(id);
    this.adopted.delete(id);
    end(s);
    return true;
  }

  /**
   * Ends the session everywhere: its record first (a process reading it after the
   * announcement must not find it), then every process's copy.
   */
  private async drop(id: string): Promise<void> {
    try {
      await this.opts.records.delete(id);
    } catch (err) {
      this.opts.onError?.(err, 'session record delete');
    }
    await this.announce({ id, ended: true });
  }

  private setOwner(id: string, owner: string | null): void {
    this.opts.records
      .update(id, { streamOwner: owner })
      .catch((err: unknown) => this.opts.onError?.(err, 'session stream owner'));
  }

  private touchBusy(): void {
    for (const s of this.values())
      if (s.inflight.size > 0)
        this.opts.records
          .touch(s.id)
          .catch((err: unknown) => this.opts.onError?.(err, 'session touch'));
  }

  /** Copies of other processes' sessions are caches: idle ones without a stream go. */
  private sweepAdopted(now: number): void {
    this.fresh.sweep(now);
    for (const [id, s] of this.adopted) {
      if (s.stream && !s.stream.closed) continue;
      if (now - s.lastSeen > this.local.idleTimeoutMs) {
        this.adopted.delete(id);
        this.fresh.forget(id);
        end(s);
      }
    }
  }
}

function snapshot(s: SessionRecord): Written {
  return {
    protocolVersion: s.protocolVersion,
    logLevel: s.logLevel,
    clientCapabilities: s.clientCapabilities,
    subscriptions: new Set(s.subscriptions ?? []),
  };
}

/** Ends a local copy the way the in-process store ends a session. */
function end(s: SessionRecord): void {
  for (const ctl of s.inflight.values()) ctl.abort(localError('session_ended'));
  s.inflight.clear();
  s.stream?.end();
  s.stream = undefined;
  s.resumable?.clear();
  resetSubscriptions(s, undefined);
}

/** Resolves after the I/O already waiting in this turn of the event loop has been handled. */
function ioTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
