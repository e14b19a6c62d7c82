/**
 * Session records and stream events on Redis, for instances on several machines. A session is
 * a hash (`<prefix>:ps:<id>`, one field per property so that two instances changing different
 * properties never overwrite each other) and a set of subscriptions, both expiring after the idle
 * timeout; sorted sets index them by last activity, all and per principal, for the
 * `maxSessions` and per-principal bounds and oldest-idle eviction. Each change is
 * one Lua script, atomic on the server. A stream's events are a capped list with a TTL.
 */
import { replayOf } from './embedded-events.js';
import type { Redis } from './redis.js';
import {
  checkStream,
  EVENT_OVERHEAD,
  recordLimits,
  STREAM_OVERHEAD,
  type AdmitCaps,
  type Admission,
  type EventReplay,
  type ProtocolSessionRecord,
  type RecordLimits,
  type SessionPatch,
  type SessionRecordStore,
} from './session-records.js';

/*
 * Admission of a new session (KEYS: index, hash, subs, the principal's index). ARGV: now, idle,
 * max, id, principal, per-principal cap, evict age (-1: never evict), prefix, then fields. The
 * indexes are sorted sets scored by last activity, so the oldest idle session is the first one.
 */
const ADMIT = `
local now, idle, max = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local id, perMax, evictAge, prefix = ARGV[4], tonumber(ARGV[6]), tonumber(ARGV[7]), ARGV[8]
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - idle)
redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', now - idle)
local evicted = {}
local function oldestIdle(key)
  if evictAge < 0 then return nil end
  return redis.call('ZRANGEBYSCORE', key, '-inf', now - evictAge, 'LIMIT', 0, 1)[1]
end
local function evict(victim)
  local hash = prefix .. ':ps:' .. victim
  local p = redis.call('HGET', hash, 'principal')
  redis.call('DEL', hash, hash .. ':subs')
  redis.call('ZREM', KEYS[1], victim)
  redis.call('ZREM', prefix .. ':ps-byp:' .. (p and cjson.decode(p) or ''), victim)
  evicted[#evicted + 1] = victim
end
if redis.call('ZCARD', KEYS[4]) >= perMax then
  local v = oldestIdle(KEYS[4])
  if not v then return {'sessions_per_principal'} end
  evict(v)
end
if redis.call('ZCARD', KEYS[1]) >= max then
  local v = oldestIdle(KEYS[1])
  if not v then return {'sessions'} end
  evict(v)
end
redis.call('ZADD', KEYS[1], now, id)
redis.call('ZADD', KEYS[4], now, id)
redis.call('PEXPIRE', KEYS[4], idle)
redis.call('DEL', KEYS[2], KEYS[3])
for i = 9, #ARGV, 2 do redis.call('HSET', KEYS[2], ARGV[i], ARGV[i + 1]) end
redis.call('PEXPIRE', KEYS[2], idle)
return {'ok', unpack(evicted)}`;

const UPDATE = `
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
for i = 1, #ARGV, 2 do
  if ARGV[i + 1] == '' then redis.call('HDEL', KEYS[1], ARGV[i])
  else redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1]) end
end
return 1`;

const TOUCH = `
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local now, idle = tonumber(ARGV[1]), tonumber(ARGV[2])
redis.call('HSET', KEYS[1], 'lastSeen', ARGV[1])
redis.call('PEXPIRE', KEYS[1], idle)
redis.call('PEXPIRE', KEYS[2], idle)
redis.call('ZADD', KEYS[3], now, ARGV[3])
local p = redis.call('HGET', KEYS[1], 'principal')
local byp = ARGV[4] .. ':ps-byp:' .. (p and cjson.decode(p) or '')
redis.call('ZADD', byp, now, ARGV[3])
redis.call('PEXPIRE', byp, idle)
return 1`;

const SUBSCRIBE = `
if redis.call('EXISTS', KEYS[1]) == 0 then return 'gone' end
if redis.call('SISMEMBER', KEYS[2], ARGV[1]) == 1 then return 'ok' end
if redis.call('SCARD', KEYS[2]) >= tonumber(ARGV[2]) then return 'full' end
redis.call('SADD', KEYS[2], ARGV[1])
redis.call('PEXPIRE', KEYS[2], redis.call('PTTL', KEYS[1]))
return 'ok'`;

/*
 * The shared event log's accounting: `ev-log` (every stream, scored by its last append, Redis
 * time), `ev-size` (its bytes), `ev-owner` (its principal), `ev-byp:<principal>` (a principal's
 * streams) and `ev-pbytes` (a principal's bytes); `ev-total` the bytes of all. FORGET drops one
 * stream whole, list and accounting; the appends use it on the streams past their TTL and, past a
 * bound, on the least recently written. PREFIX is the store's prefix.
 */
const FORGET_FN = `
local function forget(prefix, s)
  local size = tonumber(redis.call('HGET', prefix .. ':ev-size', s) or '0')
  local p = redis.call('HGET', prefix .. ':ev-owner', s)
  redis.call('DEL', prefix .. ':ev:' .. s)
  redis.call('ZREM', prefix .. ':ev-log', s)
  redis.call('HDEL', prefix .. ':ev-size', s)
  redis.call('HDEL', prefix .. ':ev-owner', s)
  redis.call('DECRBY', prefix .. ':ev-total', size)
  if p then
    redis.call('ZREM', prefix .. ':ev-byp:' .. p, s)
    if redis.call('HINCRBY', prefix .. ':ev-pbytes', p, -size) <= 0 then
      redis.call('HDEL', prefix .. ':ev-pbytes', p)
    end
  end
end
`;

/*
 * One event (KEYS: the stream's list, its principal's index). ARGV: item, max events, TTL, seq,
 * stream, principal, total bound, per-principal bound, prefix, per-event and per-stream
 * overhead. A later event of a stream the log no longer holds (expired, forgotten for a bound,
 * delivered) is not kept: its start is gone, a resumption gets 404 as for an expired one.
 */
const APPEND = `${FORGET_FN}
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local item, maxEvents, ttl, seq = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local stream, principal, maxTotal, maxPer = ARGV[5], ARGV[6], tonumber(ARGV[7]), tonumber(ARGV[8])
local prefix, perEvent, perStream = ARGV[9], tonumber(ARGV[10]), tonumber(ARGV[11])
for _, s in ipairs(redis.call('ZRANGEBYSCORE', prefix .. ':ev-log', '-inf', now - ttl, 'LIMIT', 0, 100)) do
  forget(prefix, s)
end
local known = redis.call('HEXISTS', prefix .. ':ev-size', stream) == 1
if seq > 0 and not known then return 0 end
local cost = #item + perEvent
if not known then cost = cost + perStream end
redis.call('RPUSH', KEYS[1], item)
while redis.call('LLEN', KEYS[1]) > maxEvents do
  cost = cost - #redis.call('LPOP', KEYS[1]) - perEvent
end
redis.call('PEXPIRE', KEYS[1], ttl)
redis.call('HINCRBY', prefix .. ':ev-size', stream, cost)
redis.call('HSET', prefix .. ':ev-owner', stream, principal)
redis.call('ZADD', prefix .. ':ev-log', now, stream)
redis.call('ZADD', KEYS[2], now, stream)
local mine = redis.call('HINCRBY', prefix .. ':ev-pbytes', principal, cost)
local total = redis.call('INCRBY', prefix .. ':ev-total', cost)
while mine > maxPer do
  local s = redis.call('ZRANGE', KEYS[2], 0, 0)[1]
  if not s then break end
  forget(prefix, s)
  mine = tonumber(redis.call('HGET', prefix .. ':ev-pbytes', principal) or '0')
end
total = tonumber(redis.call('GET', prefix .. ':ev-total') or '0')
while total > maxTotal do
  local s = redis.call('ZRANGE', prefix .. ':ev-log', 0, 0)[1]
  if not s then break end
  forget(prefix, s)
  total = tonumber(redis.call('GET', prefix .. ':ev-total') or '0')
end
return 1`;

/* A stream's events go (its answer was delivered). ARGV: prefix, stream. */
const DROP = `${FORGET_FN}
forget(ARGV[1], ARGV[2])
return 1`;

interface Scripts {
  mhAdmit(...args: (string | number)[]): Promise<string[]>;
  mhUpdate(...args: (string | number)[]): Promise<number>;
  mhTouch(...args: (string | number)[]): Promise<number>;
  mhSubscribe(...args: (string | number)[]): Promise<'ok' | 'full' | 'gone'>;
  mhAppend(...args: (string | number)[]): Promise<number>;
  mhDropStream(...args: (string | number)[]): Promise<number>;
}

const FIELDS = [
  'protocolVersion',
  'principal',
  'logLevel',
  'clientCapabilities',
  'streamOwner',
  'createdAt',
  'lastSeen',
] as const;

export class RedisRecords implements SessionRecordStore {
  readonly limits: Readonly<RecordLimits>;
  private readonly r: Redis & Scripts;
  /** When this instance last touched each session: touches closer than this are skipped. */
  private readonly touched = new Map<string, number>();
  private readonly touchEveryMs: number;

  constructor(
    redis: Redis,
    private readonly prefix: string,
    limits: Partial<RecordLimits> = {},
  ) {
    this.limits = recordLimits(limits);
    this.touchEveryMs = Math.max(1000, Math.floor(this.limits.idleTimeoutMs / 20));
    redis.defineCommand('mhAdmit', { numberOfKeys: 4, lua: ADMIT });
    redis.defineCommand('mhUpdate', { numberOfKeys: 1, lua: UPDATE });
    redis.defineCommand('mhTouch', { numberOfKeys: 3, lua: TOUCH });
    redis.defineCommand('mhSubscribe', { numberOfKeys: 2, lua: SUBSCRIBE });
    redis.defineCommand('mhAppend', { numberOfKeys: 2, lua: APPEND });
    redis.defineCommand('mhDropStream', { numberOfKeys: 0, lua: DROP });
    this.r = redis as Redis & Scripts;
  }

  private key(id: string): string {
    return `${this.prefix}:ps:${id}`;
  }
  private subsKey(id: string): string {
    return `${this.prefix}:ps:${id}:subs`;
  }
  private get index(): string {
    return `${this.prefix}:ps-index`;
  }
  /** A principal's sessions scored by last activity (the per-principal cap, revocation). */
  private byPrincipal(principal: string): string {
    return `${this.prefix}:ps-byp:${principal}`;
  }

  async create(rec: ProtocolSessionRecord): Promise<boolean> {
    return (await this.admit(rec, {})).ok;
  }

  async admit(rec: ProtocolSessionRecord, caps: AdmitCaps): Promise<Admission> {
    const fields: string[] = [];
    for (const f of FIELDS) if (rec[f] !== undefined) fields.push(f, JSON.stringify(rec[f]));
    const { maxSessions, idleTimeoutMs } = this.limits;
    const principal = rec.principal ?? '';
    // A record's lastSeen lags activity by up to touchEveryMs (touches are thinned): a session
    // counts as idle for eviction only past twice that, so an active one is never taken.
    const evictAge =
      caps.evictIdleMs === undefined ? -1 : Math.max(caps.evictIdleMs, 2 * this.touchEveryMs);
    const [verdict, ...evicted] = await this.r.mhAdmit(
      this.index,
      this.key(rec.id),
      this.subsKey(rec.id),
      this.byPrincipal(principal),
      rec.lastSeen,
      idleTimeoutMs,
      maxSessions,
      rec.id,
      principal,
      caps.perPrincipal ?? maxSessions,
      evictAge,
      this.prefix,
      ...fields,
    );
    if (verdict !== 'ok')
      return { ok: false, limit: verdict === 'sessions' ? 'sessions' : 'sessions_per_principal' };
    for (const id of evicted) this.touched.delete(id);
    const subs = [...new Set(rec.subscriptions)].slice(0, this.limits.maxSubscriptions);
    if (subs.length > 0)
      await this.r
        .multi()
        .sadd(this.subsKey(rec.id), ...subs)
        .pexpire(this.subsKey(rec.id), idleTimeoutMs)
        .exec();
    this.touched.set(rec.id, rec.lastSeen);
    return { ok: true, evicted };
  }

  async get(id: string): Promise<ProtocolSessionRecord | undefined> {
    const res = await this.r.multi().hgetall(this.key(id)).smembers(this.subsKey(id)).exec();
    const hash = res?.[0]?.[1] as Record<string, string> | undefined;
    if (hash === undefined || Object.keys(hash).length === 0) return undefined;
    const rec: Record<string, unknown> = { id, subscriptions: res![1]![1] as string[] };
    for (const f of FIELDS) if (hash[f] !== undefined) rec[f] = JSON.parse(hash[f]);
    return rec as unknown as ProtocolSessionRecord;
  }

  async update(id: string, patch: SessionPatch): Promise<boolean> {
    const args: string[] = [];
    for (const [k, v] of Object.entries(patch)) {
      if (v === undefined || !(FIELDS as readonly string[]).includes(k)) continue;
      args.push(k, v === null ? '' : JSON.stringify(v));
    }
    return (await this.r.mhUpdate(this.key(id), ...args)) === 1;
  }

  async touch(id: string): Promise<boolean> {
    const now = Date.now();
    const last = this.touched.get(id);
    // One write per session every idle/20 at most: the TTL stays far from running out.
    if (last !== undefined && now - last < this.touchEveryMs) return true;
    if (this.touched.size >= this.limits.maxSessions) this.touched.clear();
    this.touched.set(id, now);
    const ok = await this.r.mhTouch(
      this.key(id),
      this.subsKey(id),
      this.index,
      now,
      this.limits.idleTimeoutMs,
      id,
      this.prefix,
    );
    if (ok !== 1) this.touched.delete(id);
    return ok === 1;
  }

  async subscribe(id: string, uri: string): Promise<'ok' | 'full' | 'gone'> {
    return this.r.mhSubscribe(this.key(id), this.subsKey(id), uri, this.limits.maxSubscriptions);
  }

  async unsubscribe(id: string, uri: string): Promise<boolean> {
    return (await this.r.srem(this.subsKey(id), uri)) > 0;
  }

  async delete(id: string): Promise<boolean> {
    this.touched.delete(id);
    const principal = await this.r.hget(this.key(id), 'principal');
    const m = this.r.multi().del(this.key(id), this.subsKey(id)).zrem(this.index, id);
    m.zrem(this.byPrincipal(principal === null ? '' : (JSON.parse(principal) as string)), id);
    const res = await m.exec();
    return ((res?.[0]?.[1] as number | undefined) ?? 0) > 0;
  }

  async sessionsOf(principal: string): Promise<string[]> {
    const key = this.byPrincipal(principal);
    await this.r.zremrangebyscore(key, '-inf', Date.now() - this.limits.idleTimeoutMs);
    const ids = await this.r.zrange(key, 0, -1);
    if (ids.length === 0) return [];
    const m = this.r.multi();
    for (const id of ids) m.exists(this.key(id));
    const res = (await m.exec()) ?? [];
    const live = ids.filter((_, i) => res[i]?.[1] === 1);
    const dead = ids.filter((_, i) => res[i]?.[1] !== 1);
    if (dead.length > 0) await this.r.zrem(key, ...dead);
    return live;
  }

  async appendEvent(stream: string, seq: number, data: string, principal = ''): Promise<void> {
    checkStream(stream);
    const kept = Buffer.byteLength(data) <= this.limits.maxEventBytes ? data : null;
    await this.r.mhAppend(
      `${this.prefix}:ev:${stream}`,
      `${this.prefix}:ev-byp:${principal}`,
      JSON.stringify([seq, kept]),
      this.limits.maxEventsPerStream,
      this.limits.eventTtlMs,
      seq,
      stream,
      principal,
      this.limits.eventLogBytes,
      this.limits.eventLogBytesPerPrincipal,
      this.prefix,
      EVENT_OVERHEAD,
      STREAM_OVERHEAD,
    );
  }

  async eventsAfter(stream: string, afterSeq: number): Promise<EventReplay | undefined> {
    checkStream(stream);
    const items = await this.r.lrange(`${this.prefix}:ev:${stream}`, 0, -1);
    const rows = items.map((t) => {
      const [seq, data] = JSON.parse(t) as [number, string | null];
      return { seq, data };
    });
    return replayOf(rows, afterSeq);
  }

  async dropStream(stream: string): Promise<void> {
    checkStream(stream);
    await this.r.mhDropStream(this.prefix, stream);
  }

  async markAlive(instance: string, ttlMs: number): Promise<void> {
    await this.r.set(`${this.prefix}:alive:${instance}`, '1', 'PX', ttlMs);
  }

  async isAlive(instance: string): Promise<boolean> {
    return (await this.r.exists(`${this.prefix}:alive:${instance}`)) === 1;
  }

  async close(): Promise<void> {
    this.touched.clear();
  }
}
