/**
 * 2026-07-28 `subscriptions/listen`: the filter a client asks for, the frames of one
 * subscription, and the open subscriptions of a transport. One module for both transports: HTTP
 * writes a subscription to its own SSE stream, stdio to the shared output; each keeps only how
 * its bytes go out (`ListenWriter`).
 */
import type { EntryKind } from '../registry/types.js';
import { wireError, type WireError } from '../errors.js';
import {
  isPlainObject,
  serializeNotification,
  serializeResult,
  type JsonRpcId,
} from './jsonrpc.js';
import { LIST_CHANGED_METHOD, type ListChangedFanout } from './list-changed.js';
import { SERVER_INFO_META_KEY, SUBSCRIPTION_ID_META_KEY, type Implementation } from './protocol.js';
import {
  DEFAULT_LIMITS,
  subscriptionRefusal,
  type RefusalCounter,
  type ServerLimits,
} from './session-limits.js';
import { SubscriberIndex } from './subscriber-index.js';
import { subscriptionCost, type SubscriptionBudget } from './subscription-budget.js';

/** Default cap on open subscriptions per transport (HTTP server or stdio connection). */
export const DEFAULT_MAX_LISTENS = DEFAULT_LIMITS.listensTotal;

/** The kinds a `subscriptions/listen` filter asks for and this server honours. */
export interface ListenFilter {
  toolsListChanged?: true;
  promptsListChanged?: true;
  resourcesListChanged?: true;
  resourceSubscriptions?: string[];
}

/** Parses `params.notifications`; undefined when it is not a filter object. */
export function parseListenFilter(
  params: Record<string, unknown> | undefined,
): ListenFilter | undefined {
  const n = params?.notifications;
  if (!isPlainObject(n)) return undefined;
  const honored: ListenFilter = {};
  if (n.toolsListChanged === true) honored.toolsListChanged = true;
  if (n.promptsListChanged === true) honored.promptsListChanged = true;
  if (n.resourcesListChanged === true) honored.resourcesListChanged = true;
  const uris = n.resourceSubscriptions;
  if (Array.isArray(uris)) {
    const strings = uris.filter((u): u is string => typeof u === 'string');
    if (strings.length > 0) honored.resourceSubscriptions = strings;
  }
  return honored;
}

export function filterKinds(filter: ListenFilter): Set<EntryKind> {
  const kinds = new Set<EntryKind>();
  if (filter.toolsListChanged) kinds.add('tools');
  if (filter.promptsListChanged) kinds.add('prompts');
  if (filter.resourcesListChanged) kinds.add('resources');
  return kinds;
}

/** The frames of one subscription, serialised once when it opens. */
export function listenFrames(
  id: JsonRpcId,
  filter: ListenFilter,
  serverInfo: Implementation,
): {
  ack: string;
  notes: Record<EntryKind, string>;
  close: string;
  updated: (uri: string) => string;
} {
  const stamp = { [SUBSCRIPTION_ID_META_KEY]: id };
  const note = (kind: EntryKind): string =>
    serializeNotification(LIST_CHANGED_METHOD[kind], { _meta: stamp });
  return {
    ack: serializeNotification('notifications/subscriptions/acknowledged', {
      notifications: filter,
      _meta: stamp,
    }),
    notes: { tools: note('tools'), prompts: note('prompts'), resources: note('resources') },
    updated: (uri) =>
      serializeNotification('notifications/resources/updated', { uri, _meta: stamp }),
    close: serializeResult(id, {
      resultType: 'complete',
      _meta: { [SUBSCRIPTION_ID_META_KEY]: id, [SERVER_INFO_META_KEY]: serverInfo },
    }),
  };
}

/** Where one subscription's frames go. */
export interface ListenWriter {
  send(json: string): void;
  /**
   * Sends a list_changed of `kind`, coalesced with one still waiting for the client (HTTP:
   * `SseStream.note`); without it, `send`.
   */
  note?(kind: EntryKind, json: string): void;
  /** Ends the subscription's stream (HTTP); a no-op where the output is shared (stdio). */
  end(): void;
}

interface Subscription {
  remove(): void;
  graceful(): void;
}

const NOBODY = '\u0000nobody';

/** The open subscriptions of one transport, bounded per principal and in total. */
export class Listens {
  private readonly open = new Set<Subscription>();
  private readonly byKey = new Map<JsonRpcId, Subscription>();
  /** Open streams per principal: one client at its cap refuses only itself. */
  private readonly perPrincipal = new Map<string, number>();
  /**
   * Resource URI → the open streams asking for it, behind one registry listener: an update is
   * told to its listeners without a call per open stream.
   */
  private readonly subscribers = new SubscriberIndex<(uri: string) => void>();
  private offUpdates: (() => void) | undefined;

  constructor(
    private readonly fanout: ListChangedFanout,
    private readonly serverInfo: Implementation,
    /** Registers a listener for resource updates; returns its remover. */
    private readonly onResourceUpdated: (listener: (uri: string) => void) => () => void,
    private readonly limits: ServerLimits = DEFAULT_LIMITS,
    private readonly refused?: RefusalCounter,
    /** What the process's subscriptions count; absent for stdio's one peer. */
    private readonly budget?: SubscriptionBudget,
  ) {}

  /** The refusal of one more stream for `principal` (counted), or undefined. */
  private refusal(principal: string | undefined, filter: ListenFilter): WireError | undefined {
    const { listensTotal, listensPerPrincipal } = this.limits;
    let limit: string | undefined;
    let error: WireError | undefined;
    if ((this.perPrincipal.get(principal ?? NOBODY) ?? 0) >= listensPerPrincipal) {
      limit = 'listens_per_principal';
      error = wireError('listen_limit_principal', { max: listensPerPrincipal });
    } else if (this.open.size >= listensTotal) {
      limit = 'listens';
      error = wireError('subscription_limit', { max: listensTotal });
    } else {
      const uris = filter.resourceSubscriptions;
      // A URI named twice is one subscription, as with resources/subscribe.
      const refused =
        uris === undefined
          ? undefined
          : subscriptionRefusal(
              [...new Set(uris)],
              undefined,
              this.limits,
              this.budget && { of: this.budget, principal },
            );
      limit = refused?.limit;
      error = refused?.error;
    }
    if (limit !== undefined) this.refused?.(limit);
    return error;
  }

  private count(principal: string | undefined, by: 1 | -1): void {
    const key = principal ?? NOBODY;
    const n = (this.perPrincipal.get(key) ?? 0) + by;
    if (n > 0) this.perPrincipal.set(key, n);
    else this.perPrincipal.delete(key);
  }

  get size(): number {
    return this.open.size;
  }

  /**
   * Opens a subscription for the listen request `id`; returns the error to answer instead, or
   * undefined once `attach` has made the stream (`attach` gets the callback for its closing).
   * With a `key`, a later `cancel(key)` (stdio's notifications/cancelled) ends it.
   */
  subscribe(
    id: JsonRpcId,
    params: Record<string, unknown> | undefined,
    principal: string | undefined,
    attach: (closed: () => void) => ListenWriter,
    key?: JsonRpcId,
  ): WireError | undefined {
    const filter = parseListenFilter(params);
    if (filter === undefined)
      return wireError('invalid_params', {
        detail:
          "Invalid params: 'notifications' is required and must be a valid SubscriptionFilter",
      });
    const refused = this.refusal(principal, filter);
    if (refused !== undefined) return refused;
    const frames = listenFrames(id, filter, this.serverInfo);
    const kinds = filterKinds(filter);
    const uris = filter.resourceSubscriptions;
    // Listener removers, filled once the stream is open.
    const removers: (() => void)[] = [];
    const sub: Subscription = {
      remove: () => {
        for (const remove of removers.splice(0)) remove();
        if (this.open.delete(sub)) this.count(principal, -1);
        if (key !== undefined && this.byKey.get(key) === sub) this.byKey.delete(key);
      },
      graceful: () => {
        writer.send(frames.close);
        writer.end();
        sub.remove();
      },
    };
    const writer = attach(() => sub.remove());
    writer.send(frames.ack);
    if (kinds.size === 0 && uris === undefined) {
      sub.graceful();
      return undefined;
    }
    if (uris !== undefined) {
      const wanted = new Set(uris);
      const tell = (uri: string) => writer.send(frames.updated(uri));
      let bytes = 0;
      for (const uri of wanted) {
        this.subscribers.add(uri, tell);
        bytes += subscriptionCost(uri);
      }
      this.budget?.charge(principal, bytes);
      this.offUpdates ??= this.onResourceUpdated((uri) => {
        const tells = this.subscribers.of(uri);
        if (tells !== undefined) for (const t of tells) t(uri);
      });
      removers.push(() => {
        for (const uri of wanted) this.subscribers.delete(uri, tell);
        this.budget?.charge(principal, -bytes);
        if (this.subscribers.size > 0) return;
        this.offUpdates?.();
        this.offUpdates = undefined;
      });
    }
    removers.push(
      this.fanout.add({
        kinds,
        principal,
        deliver: (kind) =>
          writer.note ? writer.note(kind, frames.notes[kind]) : writer.send(frames.notes[kind]),
      }),
    );
    this.open.add(sub);
    this.count(principal, 1);
    if (key !== undefined) {
      this.byKey.get(key)?.remove();
      this.byKey.set(key, sub);
    }
    return undefined;
  }

  /** True while a subscription opened under `key` is open (its id is in use). */
  has(key: JsonRpcId): boolean {
    return this.byKey.has(key);
  }

  /** Ends the subscription opened under `key`, without a closing result. */
  cancel(key: unknown): void {
    if (typeof key !== 'string' && typeof key !== 'number') return;
    this.byKey.get(key)?.remove();
  }

  /** Ends every subscription with the graceful-close result (shutdown). */
  closeAll(): void {
    for (const sub of [...this.open]) sub.graceful();
    this.open.clear();
    this.byKey.clear();
    this.perPrincipal.clear();
  }
}
