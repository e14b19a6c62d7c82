/**
 * Sessions shared through Redis (`cluster.redis`): each hub keeps its SQLite sessions database
 * as a replica of one Redis hash (`<prefix>:sessions`), so a token check stays one local read
 * and no Redis command sits on the request path. A session created or revoked on one hub is
 * merged into Redis by a Lua script and announced on `<prefix>:sessions:changed`; every hub
 * applies it to its database at once, where the next token check (and the 500 ms poll that ends
 * open streams) sees it. Merging is monotonic: rows never change except to become revoked, so
 * hubs converge whatever the order. On (re)connection a hub pulls the whole hash, and pushes the
 * rows Redis lacks (those made while it was away, or before it joined).
 */
import { closeRedis, connectRedis, type Redis } from '../cluster/redis.js';
import type { ReplicatedSession, SessionStore } from './store.js';

// Adds a row, or marks a stored one revoked; publishes what is stored when it changed.
const MERGE = `
local cur = redis.call('HGET', KEYS[1], ARGV[1])
if cur then
  if not string.find(cur, '"revoked_at":null', 1, true) then return 0 end
  if string.find(ARGV[2], '"revoked_at":null', 1, true) then return 0 end
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('PUBLISH', KEYS[2], ARGV[2])
return 1`;

interface Scripts {
  mhMergeSession(hash: string, channel: string, uuid: string, row: string): Promise<number>;
}

export interface SessionSyncOptions {
  url: string;
  /** Key prefix, `<cluster.prefix>:<hub_id>` (default `moonhub:<hub_id>`). */
  prefix: string;
  /** A session added or revoked by another hub (for the log). */
  onRemoteChange?: (row: ReplicatedSession) => void;
  onError?: (err: unknown) => void;
  /** `cluster.limits.command_timeout_ms` (cluster/redis.ts). */
  commandTimeoutMs?: number | undefined;
}

function isRow(v: unknown): v is ReplicatedSession {
  const r = v as ReplicatedSession;
  return (
    typeof r === 'object' &&
    r !== null &&
    typeof r.uuid === 'string' &&
    typeof r.hub_id === 'string' &&
    (r.role === 'agent' || r.role === 'admin') &&
    typeof r.selector === 'string' &&
    typeof r.token_hash === 'string' &&
    typeof r.created_at === 'number' &&
    (r.revoked_at === null || typeof r.revoked_at === 'number')
  );
}

/** Key order fixed, so the Lua script's substring test finds `"revoked_at":null`. */
function encode(r: ReplicatedSession): string {
  return JSON.stringify({
    uuid: r.uuid,
    hub_id: r.hub_id,
    role: r.role,
    agent: r.agent,
    target: r.target,
    name: r.name,
    selector: r.selector,
    token_hash: r.token_hash,
    created_at: r.created_at,
    revoked_at: r.revoked_at,
  });
}

/** What `whenMerged` found: the change is in Redis, or why it is not known to be. */
export type MergeOutcome = 'merged' | 'failed' | 'timeout';

export class SessionSync {
  private readonly pending = new Set<Promise<unknown>>();
  /** The latest push of each session until it settles: what `whenMerged` waits for. */
  private readonly merging = new Map<string, Promise<boolean>>();
  /** The wait for the end of this event-loop turn, while one is pending (`caughtUp`). */
  private turn: Promise<void> | undefined;
  private readonly stopListening: () => void;
  private closed = false;

  private constructor(
    private readonly store: SessionStore,
    private readonly cmd: Redis & Scripts,
    private readonly sub: Redis,
    private readonly opts: SessionSyncOptions,
  ) {
    this.stopListening = store.onWrite((uuid) => this.push(uuid));
    sub.on('message', (channel: string, text: string) => {
      if (channel === this.channel) this.apply(text);
    });
    // After a reconnection, what passed while we were away is pulled, ours pushed.
    sub.on('ready', () => void this.track(this.reconcile()));
  }

  private get hash(): string {
    return `${this.opts.prefix}:sessions`;
  }
  private get channel(): string {
    return `${this.opts.prefix}:sessions:changed`;
  }

  /** Connects, subscribes, then reconciles the database with Redis before resolving. */
  static async start(store: SessionStore, opts: SessionSyncOptions): Promise<SessionSync> {
    const timeout = opts.commandTimeoutMs;
    const cmd = await connectRedis(opts.url, {
      name: 'moonhub-sessions',
      commandTimeoutMs: timeout,
    });
    let sub: Redis;
    try {
      sub = await connectRedis(opts.url, {
        name: 'moonhub-sessions-sub',
        commandTimeoutMs: timeout,
      });
    } catch (err) {
      await closeRedis(cmd);
      throw err;
    }
    cmd.defineCommand('mhMergeSession', { numberOfKeys: 2, lua: MERGE });
    const sync = new SessionSync(store, cmd as Redis & Scripts, sub, opts);
    try {
      await sub.subscribe(sync.channel);
      await sync.reconcile();
    } catch (err) {
      await sync.close();
      throw err;
    }
    return sync;
  }

  private report(err: unknown): void {
    this.opts.onError?.(err);
  }

  private track<T>(p: Promise<T>): void {
    const tracked = p.catch((err: unknown) => this.report(err));
    this.pending.add(tracked);
    void tracked.finally(() => this.pending.delete(tracked));
  }

  private apply(text: string): void {
    let row: unknown;
    try {
      row = JSON.parse(text);
    } catch (err) {
      return this.report(err);
    }
    if (!isRow(row)) return this.report(new Error('a replicated session of the wrong shape'));
    try {
      if (this.store.importRow(row)) this.opts.onRemoteChange?.(row);
    } catch (err) {
      this.report(err);
    }
  }

  private push(uuid: string): void {
    if (this.closed) return;
    const [row] = this.store.exportRows(uuid);
    if (row === undefined) return;
    const merge = this.cmd.mhMergeSession(this.hash, this.channel, row.uuid, encode(row));
    this.track(merge);
    const outcome = merge.then(
      () => true,
      () => false,
    );
    this.merging.set(uuid, outcome);
    void outcome.then(() => {
      if (this.merging.get(uuid) === outcome) this.merging.delete(uuid);
    });
  }

  /**
   * Waits until the change just made to `uuid` (called in the same turn as the write) is merged
   * into Redis, and so announced to every instance: the admin API answers after it, so a token
   * it issued or revoked is known everywhere by then. At most `ms` (the command timeout): a Redis
   * that is away must not hold the answer; the change is pushed again on reconnection.
   */
  async whenMerged(uuid: string, ms: number): Promise<MergeOutcome> {
    const outcome = this.merging.get(uuid);
    if (outcome === undefined) return this.closed ? 'failed' : 'merged';
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), ms);
    });
    try {
      return await Promise.race([outcome.then((ok) => (ok ? 'merged' : 'failed')), late]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Pulls every session Redis holds, then pushes those Redis lacks or holds unrevoked. */
  private async reconcile(): Promise<void> {
    if (this.closed) return;
    const remote = await this.cmd.hgetall(this.hash);
    for (const text of Object.values(remote)) this.apply(text);
    const merges: Promise<number>[] = [];
    for (const row of this.store.exportRows()) {
      const there = remote[row.uuid];
      const newer =
        there === undefined || (row.revoked_at !== null && there.includes('"revoked_at":null'));
      if (newer)
        merges.push(this.cmd.mhMergeSession(this.hash, this.channel, row.uuid, encode(row)));
    }
    await Promise.all(merges);
  }

  /**
   * Resolves once the announcements already on the subscriber's socket are applied: one turn of
   * the event loop (`setImmediate` runs after the I/O callbacks of the turn). A busy instance
   * may wake with a revocation and the client's next request ready together and read the
   * request first; a token checked after this turn sees every change announced before the
   * request arrived (the admin API answers only after the announcement, see `whenMerged`).
   */
  caughtUp(): Promise<void> {
    // The requests read in one turn share its wait: one setImmediate per turn, not per request.
    return (this.turn ??= new Promise((resolve) =>
      setImmediate(() => {
        this.turn = undefined;
        resolve();
      }),
    ));
  }

  /** Resolves once every change made so far has reached Redis (the CLI waits before exiting). */
  async flush(): Promise<void> {
    while (this.pending.size > 0) await Promise.all([...this.pending]);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    await this.flush();
    this.closed = true;
    this.stopListening();
    await Promise.all([closeRedis(this.cmd), closeRedis(this.sub)]);
  }
}
