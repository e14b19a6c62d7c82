/**
 * Redis connections for the cluster (ioredis): made from the `cluster.redis` URL (`redis://`,
 * `rediss://` for TLS, user and password in the URL, a database number as its path). Commands
 * fail after two retries instead of queueing forever while Redis is away, and after
 * `cluster.limits.command_timeout_ms` when Redis is connected but does not answer (stopped,
 * overloaded, a network black hole): a request that needs shared state gets an error it can
 * report, and the commands waiting are bounded by the time. The connection itself keeps
 * reconnecting (250 ms doubling to 5 s) and resubscribes its channels.
 */
import type { Redis } from 'ioredis';

export type { Redis } from 'ioredis';

export const DEFAULT_PREFIX = 'moonhub';
/** `cluster.limits.command_timeout_ms`: how long a command may wait for Redis's answer. */
export const DEFAULT_COMMAND_TIMEOUT_MS = 2000;

/** The URL without its password, for logs and errors. */
export function redactRedisUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password !== '') u.password = '***';
    return u.toString();
  } catch {
    return '(unparsable Redis URL)';
  }
}

/** Why a `cluster.redis` value is unusable, or undefined when it is fine. */
export function redisUrlProblem(url: string): string | undefined {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return `not a URL: ${redactRedisUrl(url)}`;
  }
  if (u.protocol !== 'redis:' && u.protocol !== 'rediss:')
    return `a Redis URL starts with redis:// or rediss:// (got ${u.protocol}//)`;
  if (u.pathname !== '' && u.pathname !== '/' && !/^\/\d{1,2}$/.test(u.pathname))
    return `the path of a Redis URL is a database number (got ${u.pathname})`;
  return undefined;
}

export interface RedisConnectOptions {
  /** Shown in CLIENT LIST, to tell the hub's connections apart. */
  name: string;
  connectTimeoutMs?: number;
  /** Default DEFAULT_COMMAND_TIMEOUT_MS. */
  commandTimeoutMs?: number | undefined;
}

/** A connected client; rejects with a clear message when Redis cannot be reached. */
export async function connectRedis(url: string, opts: RedisConnectOptions): Promise<Redis> {
  const problem = redisUrlProblem(url);
  if (problem !== undefined) throw new Error(`cluster.redis: ${problem}`);
  // Loaded here, not at start-up: a hub without cluster.redis never needs the client's ~50 modules.
  const { Redis } = await import('ioredis');
  const redis = new Redis(url, {
    connectionName: opts.name,
    lazyConnect: true,
    connectTimeout: opts.connectTimeoutMs ?? 5000,
    maxRetriesPerRequest: 2,
    commandTimeout: opts.commandTimeoutMs ?? DEFAULT_COMMAND_TIMEOUT_MS,
    retryStrategy: (times) => Math.min(250 * 2 ** (times - 1), 5000),
  });
  // Errors are reported through the promises of the commands; without a listener ioredis
  // would print each reconnection failure on its own.
  let cause: Error | undefined;
  const onError = (err: Error) => (cause ??= err);
  redis.on('error', onError);
  try {
    await redis.connect();
    await redis.ping();
  } catch (err) {
    redis.disconnect();
    // The socket's own error (ECONNREFUSED, ENOTFOUND, NOAUTH) says more than "closed".
    const why = (cause ?? (err as Error)).message;
    throw new Error(`cannot reach Redis at ${redactRedisUrl(url)}: ${why}`);
  }
  redis.off('error', onError);
  redis.on('error', () => {});
  return redis;
}

/** Closes a connection, politely when it is up. */
export async function closeRedis(redis: Redis): Promise<void> {
  if (redis.status === 'ready') {
    try {
      await redis.quit();
      return;
    } catch {
      // falls through to a hard disconnect
    }
  }
  redis.disconnect();
}
