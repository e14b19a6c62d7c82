/**
 * Global token buckets on Redis: one Lua script reads, refills, takes and writes a bucket
 * atomically, with Redis's own clock (instances' clocks may disagree). A bucket expires once it
 * would be full again, so idle keys do not pile up.
 */
import type { Redis } from './redis.js';
import {
  checkRule,
  idleLifetimeMs,
  type BucketRule,
  type SharedCounters,
  type TakeResult,
} from './counters.js';

const TAKE = `
local cap, rate, cost, ttl = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local b = redis.call('HMGET', KEYS[1], 't', 'at')
local tokens = tonumber(b[1]) or cap
local at = tonumber(b[2]) or now
tokens = math.min(cap, tokens + math.max(0, now - at) * rate / 1000)
local allowed, retry = 0, 0
if tokens >= cost then
  tokens = tokens - cost
  allowed = 1
else
  retry = math.ceil((cost - tokens) * 1000 / rate)
end
redis.call('HSET', KEYS[1], 't', tostring(tokens), 'at', now)
redis.call('PEXPIRE', KEYS[1], ttl)
return {allowed, tostring(tokens), retry}`;

interface Scripts {
  mhTake(key: string, ...args: (string | number)[]): Promise<[number, string, number]>;
}

export class RedisCounters implements SharedCounters {
  private readonly r: Redis & Scripts;

  constructor(
    redis: Redis,
    private readonly prefix: string,
  ) {
    redis.defineCommand('mhTake', { numberOfKeys: 1, lua: TAKE });
    this.r = redis as Redis & Scripts;
  }

  async take(key: string, rule: BucketRule, cost = 1): Promise<TakeResult> {
    checkRule(rule, cost);
    const [allowed, tokens, retry] = await this.r.mhTake(
      `${this.prefix}:bucket:${key}`,
      rule.capacity,
      rule.refillPerSecond,
      cost,
      idleLifetimeMs(rule),
    );
    return { allowed: allowed === 1, remaining: Number(tokens), retryAfterMs: retry };
  }

  async close(): Promise<void> {}
}
