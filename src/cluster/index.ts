/**
 * The shared state of a hub made of several processes, chosen once per process:
 *
 * | mode      | when                     | bus                  | records, counters         |
 * | --------- | ------------------------ | -------------------- | ------------------------- |
 * | `single`  | one process (default)    | in-process           | memory (counters), SQLite |
 * | `workers` | `serve --workers N`      | IPC via the primary  | SQLite in the data folder |
 * | `redis`   | `cluster.redis` / --redis | Redis pub/sub        | Redis                     |
 *
 * The session records and counters are opened on first use, so a hub that never needs them
 * makes no file and no Redis key.
 */
import { randomBytes } from 'node:crypto';
import type Database from 'better-sqlite3';
import type { MessageBus } from './bus.js';
import { LocalBus, newInstanceId } from './local-bus.js';
import { IpcBus } from './ipc-bus.js';
import { RedisBus } from './redis-bus.js';
import { closeRedis, connectRedis, DEFAULT_PREFIX, type Redis } from './redis.js';
import { openClusterDb } from './embedded-db.js';
import { EmbeddedRecords } from './embedded-records.js';
import { RedisRecords } from './redis-records.js';
import { EmbeddedCounters, LocalCounters, type SharedCounters } from './counters.js';
import { RedisCounters } from './redis-counters.js';
import { AnswerRouter, type AnswerRouterOptions } from './answers.js';
import type { RecordLimits, SessionRecordStore } from './session-records.js';

export type ClusterMode = 'single' | 'workers' | 'redis';

export interface ClusterOptions {
  hubId: string;
  /** The data folder (embedded records and counters). */
  dataDir: string;
  /** `cluster.redis`: instances across machines share Redis. */
  redis?: string | undefined;
  /** `cluster.prefix` (default "moonhub"); keys and channels are `<prefix>:<hub_id>:...`. */
  prefix?: string | undefined;
  /** This process is one of `serve --workers N` (the IPC bus to the others). */
  worker?: boolean;
  limits?: Partial<RecordLimits>;
  /** Bounds of requests waiting for a client's answer (`cluster.limits`). */
  answers?: AnswerRouterOptions;
  /**
   * `--workers` without Redis: the answer key the primary gave every worker. With Redis the
   * instances share one kept there; a single process makes its own.
   */
  answerKey?: Uint8Array | undefined;
  /** `cluster.limits.command_timeout_ms` (redis.ts). */
  commandTimeoutMs?: number | undefined;
  onError?: (err: unknown, where: string) => void;
}

export interface Cluster {
  readonly mode: ClusterMode;
  readonly instanceId: string;
  /** `<prefix>:<hub_id>`: the namespace of this hub's keys and channels. */
  readonly namespace: string;
  readonly bus: MessageBus;
  readonly answers: AnswerRouter;
  /** Shared 2025 session records and SSE event logs (opened on first use). */
  records(): SessionRecordStore;
  /** Global token buckets (opened on first use). */
  counters(): SharedCounters;
  close(): Promise<void>;
}

export function clusterMode(opts: Pick<ClusterOptions, 'redis' | 'worker'>): ClusterMode {
  return opts.redis !== undefined ? 'redis' : opts.worker === true ? 'workers' : 'single';
}

export async function openCluster(opts: ClusterOptions): Promise<Cluster> {
  const mode = clusterMode(opts);
  const instanceId = newInstanceId();
  const namespace = `${opts.prefix ?? DEFAULT_PREFIX}:${opts.hubId}`;
  const onError = (err: unknown, where: string) => opts.onError?.(err, where);
  const busError = (err: unknown, channel: string) => onError(err, `bus channel ${channel}`);
  let redis: Redis | undefined;
  let bus: MessageBus;
  let answerKey = opts.answerKey;
  if (opts.redis !== undefined) {
    bus = await RedisBus.open({
      url: opts.redis,
      prefix: namespace,
      instanceId,
      onError: busError,
      commandTimeoutMs: opts.commandTimeoutMs,
    });
    try {
      redis = await connectRedis(opts.redis, {
        name: `moonhub-${instanceId}-state`,
        commandTimeoutMs: opts.commandTimeoutMs,
      });
      answerKey = await sharedAnswerKey(redis, namespace);
    } catch (err) {
      await bus.close();
      if (redis !== undefined) await closeRedis(redis);
      throw err;
    }
  } else if (opts.worker === true) bus = new IpcBus(instanceId, busError);
  else bus = new LocalBus(instanceId, busError);

  let db: Database.Database | undefined;
  let records: SessionRecordStore | undefined;
  let counters: SharedCounters | undefined;
  const answers = new AnswerRouter(bus, opts.answers, answerKey);
  const rekey = redis === undefined ? undefined : keepAnswerKey(redis, namespace, answers, onError);
  return {
    mode,
    instanceId,
    namespace,
    bus,
    answers,
    records() {
      if (records !== undefined) return records;
      if (redis !== undefined) return (records = new RedisRecords(redis, namespace, opts.limits));
      db ??= openClusterDb(opts.dataDir);
      return (records = new EmbeddedRecords(db, opts.limits));
    },
    counters() {
      if (counters !== undefined) return counters;
      if (redis !== undefined) return (counters = new RedisCounters(redis, namespace));
      if (mode === 'single') return (counters = new LocalCounters());
      db ??= openClusterDb(opts.dataDir);
      return (counters = new EmbeddedCounters(db));
    },
    async close() {
      clearInterval(rekey);
      answers.close();
      await Promise.allSettled([records?.close(), counters?.close(), bus.close()]);
      if (redis !== undefined) await closeRedis(redis);
      db?.close();
    },
  };
}

/** How often an instance re-reads the shared answer key (a Redis that lost it gets it back). */
const ANSWER_KEY_CHECK_MS = 10_000;

/**
 * The answer key every instance on this Redis shares (`<namespace>:answer-key`): the first
 * instance makes it. Trusted like the rest of Redis: whoever can write there can forge ids.
 */
async function sharedAnswerKey(
  redis: Redis,
  namespace: string,
  mine: Buffer = randomBytes(32),
): Promise<Buffer> {
  const key = `${namespace}:answer-key`;
  await redis.set(key, mine.toString('base64'), 'NX');
  const text = await redis.get(key);
  if (text === null) throw new Error(`the answer key ${key} vanished from Redis`);
  return Buffer.from(text, 'base64');
}

/**
 * Re-reads the key on a timer: a Redis restarted empty gets the key of the first instance to
 * look (ours, written back), and instances that made another meanwhile take it up; ids tagged
 * with the previous key still check (AnswerRouter.rekey).
 */
function keepAnswerKey(
  redis: Redis,
  namespace: string,
  answers: AnswerRouter,
  onError: (err: unknown, where: string) => void,
): NodeJS.Timeout {
  const timer = setInterval(() => {
    sharedAnswerKey(redis, namespace, answers.key).then(
      (k) => answers.rekey(k),
      (err: unknown) => onError(err, 'the shared answer key'),
    );
  }, ANSWER_KEY_CHECK_MS);
  timer.unref();
  return timer;
}

export type { MessageBus, BusHandler } from './bus.js';
export type { SessionRecordStore, ProtocolSessionRecord, RecordLimits } from './session-records.js';
export type { SharedCounters, BucketRule, TakeResult } from './counters.js';
export { AnswerRouter } from './answers.js';
export { channels, onTopic, publishTopic, type TopicPayloads } from './topics.js';
