/**
 * The session-side bounds of the front door (`limits:` in the config, docs/security.md): 2025
 * sessions per principal and in total with oldest-idle eviction, idle expiry, subscriptions per
 * session, `subscriptions/listen` streams per principal, batch length and request ids. The
 * session index here keeps sessions in least-recently-active order, so admitting, evicting and
 * expiring cost O(1) amortised (a bounded look at the oldest few), not a scan of the store.
 * Nothing here knows HTTP; a shared-records session layer can reuse the index and the numbers.
 */
import { wireError, type WireError } from '../errors.js';
import type { JsonRpcId } from './jsonrpc.js';
import { DEFAULT_REQUEST_STATE_TTL_MS } from './request-state.js';
import { defaultConnectionsTotal } from './connection-guard.js';
import {
  DEFAULT_SUBSCRIPTION_BYTES_PER_PRINCIPAL,
  DEFAULT_SUBSCRIPTION_BYTES_TOTAL,
  subscriptionCost,
  type SubscriptionBudget,
} from './subscription-budget.js';

export interface ServerLimits {
  /** 2025 HTTP sessions in total (`limits.sessions.total`). */
  sessionsTotal: number;
  /** 2025 HTTP sessions of one principal (`limits.sessions.per_principal`). */
  sessionsPerPrincipal: number;
  /** A session the client sent nothing for this long ends, open stream or not. */
  sessionIdleMs: number;
  /** A session is idle enough to be evicted for a newcomer after this long without a message. */
  sessionEvictIdleMs: number;
  /** JSON characters of the clientInfo and capabilities a 2025 session keeps from initialize. */
  sessionClientInfoChars: number;
  /** Objects and arrays in them (what they take parsed grows with these, not with characters). */
  sessionClientInfoContainers: number;
  /** Resources one session (2025) or one listen stream (2026-07-28) may subscribe to. */
  subscriptionsPerSession: number;
  /** Characters of a subscribed resource URI. */
  subscriptionUriLength: number;
  /** Characters of all the URIs one session (2025) or one listen stream (2026-07-28) holds. */
  subscriptionCharsPerSession: number;
  /**
   * Bytes all the subscriptions of one principal (its 2025 sessions and listen streams) count,
   * per process: each its URI's characters plus `SUBSCRIPTION_OVERHEAD`.
   */
  subscriptionBytesPerPrincipal: number;
  /** The same over every principal, per process. */
  subscriptionBytesTotal: number;
  /** Open `subscriptions/listen` streams of one principal, per transport. */
  listensPerPrincipal: number;
  /** Open `subscriptions/listen` streams in total, per transport. */
  listensTotal: number;
  /** Messages in one JSON-RPC batch (2025-03-26). */
  batchLength: number;
  /** Characters of a string request id. */
  requestIdLength: number;
  /** Requests of the stdio peer running at once (a flood of lines must not queue without bound). */
  stdioInFlight: number;
  /**
   * HTTP requests of one principal running at once (a batch counts its members), from dispatch
   * to the call's end, per process.
   */
  httpInFlightPerPrincipal: number;
  /** Characters of the tool or prompt name a `tools/call` or `prompts/get` names. */
  nameLength: number;
  /** POST body bytes one principal may have arriving at once, over all its requests (HTTP). */
  bodyBytesPerPrincipal: number;
  /** POST body bytes arriving at once over all requests (HTTP). */
  bodyBytesTotal: number;
  /** How deep one message's objects and arrays may nest. */
  jsonDepth: number;
  /** Objects and arrays in one message. */
  jsonContainers: number;
  /** Members of one object in a message. */
  jsonObjectKeys: number;
  /** How long a 2026-07-28 `requestState` is accepted after it was sealed (request-state.ts). */
  requestStateTtlMs: number;
  /** TCP connections open at once, per process (connection-guard.ts). */
  connectionsTotal: number;
  /** TCP connections of one client address, per process. */
  connectionsPerAddress: number;
  /** Time a connection has to deliver a request's headers (its first one's, from its opening). */
  connectionHeadersMs: number;
}

/** Read once: the process's descriptor limit decides it (connection-guard.ts). */
const DEFAULT_CONNECTIONS_TOTAL = defaultConnectionsTotal();

export const DEFAULT_LIMITS: Readonly<ServerLimits> = {
  sessionsTotal: 10_000,
  sessionsPerPrincipal: 1_000,
  sessionIdleMs: 30 * 60_000,
  sessionEvictIdleMs: 10_000,
  sessionClientInfoChars: 16_384,
  sessionClientInfoContainers: 256,
  subscriptionsPerSession: 1_000,
  subscriptionUriLength: 4_096,
  subscriptionCharsPerSession: 65_536,
  subscriptionBytesPerPrincipal: DEFAULT_SUBSCRIPTION_BYTES_PER_PRINCIPAL,
  subscriptionBytesTotal: DEFAULT_SUBSCRIPTION_BYTES_TOTAL,
  listensPerPrincipal: 64,
  listensTotal: 1_024,
  batchLength: 100,
  requestIdLength: 256,
  nameLength: 256,
  stdioInFlight: 1_000,
  httpInFlightPerPrincipal: 1_000,
  bodyBytesPerPrincipal: 32 * 1024 * 1024,
  bodyBytesTotal: 256 * 1024 * 1024,
  jsonDepth: 256,
  jsonContainers: 100_000,
  jsonObjectKeys: 10_000,
  requestStateTtlMs: DEFAULT_REQUEST_STATE_TTL_MS,
  connectionsTotal: DEFAULT_CONNECTIONS_TOTAL,
  // Half: one address cannot take every place, and a load balancer in front (whose streams each
  // hold a connection from its one address) still gets thousands.
  connectionsPerAddress: Math.max(8, Math.floor(DEFAULT_CONNECTIONS_TOTAL / 2)),
  connectionHeadersMs: 30_000,
};

/** Counts a refusal by the limit's name (HubMetrics.refused, wired by operations.ts). */
export type RefusalCounter = (limit: string) => void;

/** The options a transport takes for its bounds. */
export interface LimitOptions {
  /** The bounds; each missing one has its default (DEFAULT_LIMITS). */
  limits?: Partial<ServerLimits>;
  /** Told the limit's name at every refusal. */
  refused?: RefusalCounter;
}

export function resolveLimits(given: Partial<ServerLimits> | undefined): ServerLimits {
  const out = { ...DEFAULT_LIMITS };
  if (given !== undefined)
    for (const [k, v] of Object.entries(given))
      if (typeof v === 'number' && v >= 0) out[k as keyof ServerLimits] = v;
  return out;
}

/** A string id past `maxLength`, or a number that is not a safe integer: the reason, else undefined. */
export function badRequestId(id: JsonRpcId, maxLength: number): string | undefined {
  if (typeof id === 'string')
    return id.length > maxLength
      ? `is longer than ${maxLength} characters (limits.request_id_length)`
      : undefined;
  return Number.isSafeInteger(id) ? undefined : 'must be a string or a safe integer';
}

/**
 * The refusal of a request naming a tool or prompt longer than `limits.name_length`, or reading
 * a resource URI longer than `limits.subscriptions.uri_length`; undefined otherwise. The name is
 * kept by what watches calls (the dashboard's recent calls, rate buckets keyed by tool, the
 * audit log), so it is bounded before any of them sees it.
 */
export function nameRefusal(
  method: string,
  params: Record<string, unknown> | undefined,
  limits: ServerLimits,
): WireError | undefined {
  if (method === 'tools/call' || method === 'prompts/get') {
    const name = params?.name;
    if (typeof name === 'string' && name.length > limits.nameLength)
      return wireError('name_too_long', {
        what: method === 'tools/call' ? 'a tool name' : 'a prompt name',
        max: limits.nameLength,
        key: 'limits.name_length',
        length: name.length,
      });
  } else if (method === 'resources/read') {
    const uri = params?.uri;
    if (typeof uri === 'string' && uri.length > limits.subscriptionUriLength)
      return wireError('name_too_long', {
        what: 'a resource URI',
        max: limits.subscriptionUriLength,
        key: 'limits.subscriptions.uri_length',
        length: uri.length,
      });
  }
  return undefined;
}

/**
 * The refusal of a subscription URI list (one `resources/subscribe` of a URI not held yet, or a
 * listen filter's distinct URIs): the session's bounds, then what the principal and the process
 * hold in all (`budget`, absent for stdio's one peer).
 */
export function subscriptionRefusal(
  uris: readonly string[],
  held: ReadonlySet<string> | undefined,
  limits: ServerLimits,
  budget?: { of: SubscriptionBudget; principal: string | undefined },
): { error: WireError; limit: string } | undefined {
  const max = limits.subscriptionUriLength;
  let chars = 0;
  for (const uri of uris) {
    if (uri.length > max)
      return {
        error: wireError('subscription_uri_too_long', { max, length: uri.length }),
        limit: 'subscription_uri_length',
      };
    chars += uri.length;
  }
  if ((held?.size ?? 0) + uris.length > limits.subscriptionsPerSession)
    return {
      error: wireError('subscriptions_per_session', { max: limits.subscriptionsPerSession }),
      limit: 'subscriptions_per_session',
    };
  // Each URI may be 4096 characters and a session may hold 1,000: 20 sessions holding that took
  // a hub +91 MiB, and a principal may have 1,000 sessions. Summed here (at most 1,000 lengths).
  if (held !== undefined) for (const uri of held) chars += uri.length;
  if (chars > limits.subscriptionCharsPerSession)
    return {
      error: wireError('subscription_chars', { max: limits.subscriptionCharsPerSession }),
      limit: 'subscription_chars',
    };
  if (budget === undefined) return undefined;
  let bytes = 0;
  for (const uri of uris) bytes += subscriptionCost(uri);
  return budget.of.refusal(budget.principal, bytes);
}

/**
 * A 2025 `initialize` whose clientInfo and capabilities take more than
 * `limits.sessions.client_info_chars` of JSON, or hold more than
 * `limits.sessions.client_info_containers` objects and arrays: the session keeps them, parsed,
 * for its life, and a principal may hold 1,000 sessions (40 sessions with 3 MB of them: +164 MiB
 * of RSS; 16,384 characters of `[{},{},...]` are 5,460 objects, ~340 KiB parsed).
 */
export function clientInfoRefusal(
  params: Record<string, unknown> | undefined,
  limits: ServerLimits,
): { error: WireError; limit: string } | undefined {
  if (params === undefined) return undefined;
  const max = limits.sessionClientInfoChars;
  const length = jsonLength(params.clientInfo) + jsonLength(params.capabilities);
  if (length > max)
    return {
      error: wireError('client_info_too_large', { max, length }),
      limit: 'client_info_chars',
    };
  const most = limits.sessionClientInfoContainers;
  if (containersOf([params.clientInfo, params.capabilities], most) <= most) return undefined;
  return {
    error: wireError('client_info_too_complex', { max: most }),
    limit: 'client_info_containers',
  };
}

/** Objects and arrays in `values`; the count stops once it passes `max`. */
function containersOf(values: unknown[], max: number): number {
  const stack = values;
  let n = 0;
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v !== 'object' || v === null) continue;
    if (++n > max) return n;
    for (const x of Array.isArray(v) ? v : Object.values(v))
      if (typeof x === 'object' && x !== null) stack.push(x);
  }
  return n;
}

function jsonLength(value: unknown): number {
  return value === undefined ? 0 : (JSON.stringify(value)?.length ?? 0);
}

/** What the index needs of a session. */
export interface IndexedSession {
  readonly id: string;
  readonly principal: string | undefined;
  lastSeen: number;
  /** When the index last moved it to the back (the index's own; `lastSeen` is at most 1 s on). */
  orderedAt?: number;
  readonly inflight: { readonly size: number };
}

/**
 * A touch moves a session only when its place is this old: a chatty client costs two Map moves
 * a second, not two per request, and the order stays right to within this much.
 */
const REORDER_MS = 1000;

/** How many of the oldest sessions an admission looks at for one without a call in flight. */
const EVICT_LOOKAHEAD = 32;
const NOBODY = '\u0000nobody';

/**
 * Sessions in least-recently-active order, globally and per principal (a Map keeps insertion
 * order; a touch moves the session to the end), so the oldest idle one is at the front.
 */
export class SessionIndex<S extends IndexedSession> {
  private readonly all = new Map<string, S>();
  private readonly byPrincipal = new Map<string, Map<string, S>>();

  constructor(private readonly limits: ServerLimits) {}

  get size(): number {
    return this.all.size;
  }

  get(id: string): S | undefined {
    return this.all.get(id);
  }

  values(): IterableIterator<S> {
    return this.all.values();
  }

  add(s: S): void {
    s.orderedAt = s.lastSeen;
    this.all.set(s.id, s);
    const key = s.principal ?? NOBODY;
    let own = this.byPrincipal.get(key);
    if (own === undefined) this.byPrincipal.set(key, (own = new Map()));
    own.set(s.id, s);
  }

  /** Marks client activity: the session moves to the back of both orders. */
  touch(s: S, now: number): void {
    s.lastSeen = now;
    if (now - (s.orderedAt ?? 0) < REORDER_MS) return;
    s.orderedAt = now;
    this.all.delete(s.id);
    this.all.set(s.id, s);
    const own = this.byPrincipal.get(s.principal ?? NOBODY);
    if (own !== undefined) {
      own.delete(s.id);
      own.set(s.id, s);
    }
  }

  remove(s: S): boolean {
    if (!this.all.delete(s.id)) return false;
    const key = s.principal ?? NOBODY;
    const own = this.byPrincipal.get(key);
    own?.delete(s.id);
    if (own?.size === 0) this.byPrincipal.delete(key);
    return true;
  }

  /**
   * Makes room for a new session of `principal`: the session to evict first (undefined when there
   * is room), or the refusal. A principal at its cap gives up its own oldest idle session; a full
   * store gives up the oldest idle one of anybody. A session with a call in flight, or that
   * spoke within `sessionEvictIdleMs`, is active and never evicted.
   */
  admit(
    principal: string | undefined,
    now: number,
  ): { evict: S | undefined } | { error: WireError; limit: string } {
    const own = this.byPrincipal.get(principal ?? NOBODY);
    const perPrincipal = this.limits.sessionsPerPrincipal;
    if (own !== undefined && own.size >= perPrincipal) {
      const evict = this.oldestIdle(own, now);
      if (evict !== undefined) return { evict };
      return {
        error: wireError('sessions_per_principal', { max: perPrincipal }),
        limit: 'sessions_per_principal',
      };
    }
    if (this.all.size < this.limits.sessionsTotal) return { evict: undefined };
    const evict = this.oldestIdle(this.all, now);
    if (evict !== undefined) return { evict };
    return {
      error: wireError('too_many_sessions', { max: this.limits.sessionsTotal }),
      limit: 'sessions',
    };
  }

  /** Sessions the client has not spoken to for the idle timeout (calls in flight spare one). */
  *expired(now: number): Generator<S> {
    const cutoff = now - this.limits.sessionIdleMs;
    for (const s of this.all.values()) {
      // The order is by last activity (to within REORDER_MS): the first recent one ends the walk.
      if ((s.orderedAt ?? 0) >= cutoff) return;
      if (s.lastSeen < cutoff && s.inflight.size === 0) yield s;
    }
  }

  private oldestIdle(order: Map<string, S>, now: number): S | undefined {
    const cutoff = now - this.limits.sessionEvictIdleMs;
    let looked = 0;
    for (const s of order.values()) {
      if ((s.orderedAt ?? 0) > cutoff || looked++ >= EVICT_LOOKAHEAD) return undefined;
      if (s.lastSeen <= cutoff && s.inflight.size === 0) return s;
    }
    return undefined;
  }
}
