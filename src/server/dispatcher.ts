/**
 * The transport-independent MCP dispatcher: one object per server (not per request or session)
 * that answers a parsed JSON-RPC request from the registry and returns the serialised response.
 * The inbound layer decides the era, the session and the principal; the dispatcher reads them
 * from the scope, resolves the caller's view once per request, and runs the method.
 */
import { observeCalls, type CallEvent } from './call-observer.js';
import {
  WIRE_ERRORS,
  WireError,
  localError,
  modernStatusOf,
  wireError,
  type RegistryErrorCode,
  type WireErrorName,
} from '../errors.js';
import { RegistryError } from '../registry/errors.js';
import { attachState, lazyField } from '../registry/lazy-fields.js';
import { rawJsonOf } from '../registry/raw-json.js';
import type { Registry } from '../registry/registry.js';
import type { CallContext, OwnerFilter } from '../registry/types.js';
import { RequestPeer, settleOutgoing } from './call-peer.js';
import { FlowLimits } from './flow-limits.js';
import { INPUT_METHODS, inputBinding, resumeRound, type RequestChannel } from './channel.js';
import { RequestStates } from './request-state.js';
import {
  isPlainObject,
  serializeError,
  serializeResult,
  type JsonRpcId,
  type JsonRpcNotification,
  type JsonRpcRequest,
} from './jsonrpc.js';
import { DEFAULT_LIST_CACHE_BYTES, ListCache } from './list-cache.js';
import { createMethods, type Call, type MethodHandler } from './methods.js';
import { observeEnd, observeStart, type CallObserver, type ObservedCall } from './observer.js';
import { DEFAULT_PAGE_SIZE } from './pagination.js';
import {
  CACHEABLE_METHODS,
  MODERN_METHODS,
  SERVER_INFO_META_KEY,
  packageVersion,
  type Implementation,
} from './protocol.js';
import type { RequestScope, SessionState } from './session.js';
import { resolveLimits, type LimitOptions } from './session-limits.js';

export { newSessionState, type RequestScope, type SessionState } from './session.js';
export { LazyAbort, type Abortable } from './abort.js';

/** What a context's lazy fields are made from. */
interface PeerState {
  call: Call;
  flow: FlowLimits;
  states: RequestStates;
  peer: RequestPeer | undefined;
}

const SIGNAL_FIELD = lazyField((s: PeerState) => s.call.channel!.signal);
const PEER_FIELD = lazyField(
  (s: PeerState) =>
    (s.peer ??= new RequestPeer(
      s.call.scope,
      s.call.params,
      s.call.channel,
      s.call.method,
      s.flow,
      s.states,
    )),
);

export interface DispatcherOptions extends LimitOptions {
  /** Items per page of the list methods (default 100). */
  pageSize?: number;
  /**
   * Bound of the serialised list pages kept per view (bytes; 0: no cache). Default 8 MiB
   * (`performance.list_cache_bytes`).
   */
  listCacheBytes?: number;
  serverInfo?: Implementation;
  instructions?: string;
  /**
   * Per-principal view hook: which owners this request may see. Default: everything. Called
   * once per request; cache inside it (e.g. per principal and registry version).
   */
  filterFor?: (scope: RequestScope) => OwnerFilter;
  /**
   * Identity hook: fills who the caller is (session_uuid, agent_name, target) into a call's
   * context, after the dispatcher has set hub_id, request_id, principal and filter.
   */
  contextFor?: (scope: RequestScope, ctx: CallContext) => void;
  /** Watches every inbound call (metrics, audit, tracing); see observer.ts. */
  observer?: CallObserver;
  /** Internal errors (handler bugs); never written to stdout. */
  onError?: (err: unknown) => void;
  /** Per-call hook (`moonhub dev`'s log line; issue 15): see call-observer.ts. */
  onCall?: (e: CallEvent) => void;
  /** Stream, notice and rate bounds (limits.*); default: the documented defaults, no rate limit. */
  flow?: FlowLimits;
  /**
   * Seals 2026-07-28 request states. Every process of a hub must share its key (cluster modes:
   * derived from the cluster's answer key); default: a random key of this dispatcher's own.
   */
  requestStates?: RequestStates;
}

export type { CallEvent } from './call-observer.js';

export interface McpDispatcher {
  readonly registry: Registry;
  readonly serverInfo: Implementation;
  readonly capabilities: Record<string, unknown>;
  readonly observer: CallObserver | undefined;
  /** The flow bounds its calls' messages keep (and the transports' streams, when they share it). */
  readonly flow: FlowLimits;
  /** Answers one request; never throws. The channel backs the handler's signal and peer. */
  handleRequest(
    msg: JsonRpcRequest,
    scope: RequestScope,
    channel?: RequestChannel,
  ): Promise<string>;
  /** Handles one notification (initialized, cancelled); never throws. */
  handleNotification(msg: JsonRpcNotification, scope: RequestScope): void;
  /** Routes a client's response to the server request it answers; false if none waits. */
  handleResponse(msg: Record<string, unknown>, session: SessionState): boolean;
}

/** The wire error each local registry error becomes (the others are internal errors). */
const LOCAL_TO_WIRE: Partial<Record<RegistryErrorCode, WireErrorName>> = {
  unknown_tool: 'unknown_tool',
  unknown_prompt: 'unknown_prompt',
  unknown_resource: 'unknown_resource',
  invalid_arguments: 'invalid_params',
  // The plugin's failure, logged as such by the registry's listener: the client gets the
  // handler's own message under MCP's code for a failed read, render or completion.
  handler_failed: 'handler_failed',
};

const CAPABILITIES: Record<string, unknown> = {
  tools: { listChanged: true },
  prompts: { listChanged: true },
  resources: { subscribe: true, listChanged: true },
  logging: {},
  completions: {},
};

export function createMcpDispatcher(
  registry: Registry,
  opts: DispatcherOptions = {},
): McpDispatcher {
  return new Dispatcher(registry, opts);
}

/** The dispatcher: the method table over one registry, and how answers and errors are shaped. */
class Dispatcher implements McpDispatcher {
  readonly serverInfo: Implementation;
  readonly capabilities = CAPABILITIES;
  readonly observer: CallObserver | undefined;
  readonly flow: FlowLimits;
  private readonly states: RequestStates;
  private readonly methods: Record<string, MethodHandler>;
  private readonly serverInfoMeta: Record<string, unknown>;
  private readonly modernSuffix: string;
  private readonly lists: ListCache | undefined;

  constructor(
    readonly registry: Registry,
    private readonly opts: DispatcherOptions,
  ) {
    const pageSize =
      opts.pageSize && opts.pageSize > 0 ? Math.floor(opts.pageSize) : DEFAULT_PAGE_SIZE;
    this.serverInfo = opts.serverInfo ?? { name: 'moonhub', version: packageVersion() };
    this.observer = opts.observer;
    this.flow = opts.flow ?? new FlowLimits();
    const limits = resolveLimits(opts.limits);
    this.states =
      opts.requestStates ?? new RequestStates(undefined, { ttlMs: limits.requestStateTtlMs });
    this.serverInfoMeta = { [SERVER_INFO_META_KEY]: this.serverInfo };
    this.modernSuffix = '"resultType":"complete","_meta":' + JSON.stringify(this.serverInfoMeta);
    const listBytes = opts.listCacheBytes ?? DEFAULT_LIST_CACHE_BYTES;
    if (listBytes > 0) this.lists = new ListCache(registry, listBytes);
    this.methods = createMethods({
      registry,
      pageSize,
      serverInfo: this.serverInfo,
      capabilities: this.capabilities,
      instructions: opts.instructions,
      limits,
      refused: opts.refused,
      contextOf: (call) => this.contextOf(call),
    });
    // `moonhub dev`'s per-call line (call-observer.ts), wrapped in only when asked for.
    if (opts.onCall !== undefined) {
      this.handleRequest = observeCalls(
        this.handleRequest.bind(this),
        opts.onCall,
        (scope) => scope.principal ?? scope.session?.principal,
      );
    }
  }

  /** The handler's CallContext: who calls, its view, its signal and its way back to the client. */
  private contextOf(call: Call): CallContext {
    const channel = call.channel;
    const ctx: CallContext = { hub_id: this.registry.hubId, request_id: call.id };
    // The signal and the peer are own getters shared by every context (lazy-fields.ts): made only
    // when a handler reads them, and copied by `{ ...ctx }`.
    attachState<CallContext, PeerState>(ctx, {
      call,
      flow: this.flow,
      states: this.states,
      peer: undefined,
    });
    if (channel !== undefined) Object.defineProperty(ctx, 'signal', SIGNAL_FIELD);
    Object.defineProperty(ctx, 'peer', PEER_FIELD);
    // Not enumerable: a copy that sets a signal of its own (`{ ...ctx, signal }`) must not keep
    // watching this one.
    if (channel !== undefined) Object.defineProperty(ctx, 'abortWatch', { value: channel });
    const scope = call.scope;
    const session = scope.session;
    if (session?.id !== undefined) ctx.session_uuid = session.id;
    const principal = scope.principal ?? session?.principal;
    if (principal !== undefined) ctx.principal = principal;
    if (call.filter !== undefined) ctx.filter = call.filter;
    this.opts.contextFor?.(scope, ctx);
    if (call.observed !== undefined) {
      call.observed.agent = ctx.agent_name;
      call.observed.target = ctx.target;
    }
    return ctx;
  }

  /** Shapes a 2026-07-28 result: `resultType`, cache hints where required, serverInfo in `_meta`. */
  private modernResult(method: string, result: Record<string, unknown>): Record<string, unknown> {
    const meta = result._meta;
    const out: Record<string, unknown> = {
      ...result,
      resultType: typeof result.resultType === 'string' ? result.resultType : 'complete',
      _meta: isPlainObject(meta) ? { ...meta, ...this.serverInfoMeta } : this.serverInfoMeta,
    };
    if (CACHEABLE_METHODS.has(method)) {
      // ttlMs 0: entries change whenever plugins reload, so clients must not serve stale lists.
      if (out.ttlMs === undefined) out.ttlMs = 0;
      if (out.cacheScope === undefined) out.cacheScope = 'private';
    }
    return out;
  }

  /**
   * The answer from a result that carries its own JSON text (registry/raw-json.ts: a proxied
   * upstream's result passed on): only `_meta` and the 2026-07-28 members are added. Undefined
   * when the era's shaping needs more than that (an input round, a `_meta` to merge).
   */
  private rawAnswer(call: Call, result: Record<string, unknown>, raw: string): string | undefined {
    const meta = result._meta;
    if (call.scope.era !== 'modern') {
      if (meta === undefined) return resultPrefix(call.id) + raw + '}';
      return resultPrefix(call.id) + splice(raw, '"_meta":' + JSON.stringify(meta)) + '}';
    }
    if (call.channel?.round?.result !== undefined || result.resultType !== undefined) return;
    if (CACHEABLE_METHODS.has(call.method)) return undefined;
    // The hub's serverInfo replaces the upstream's; any other `_meta` member needs the merge.
    if (meta !== undefined && !onlyServerInfo(meta)) return undefined;
    return resultPrefix(call.id) + splice(raw, this.modernSuffix) + '}';
  }

  /** Serialises a successful result for the request's era. */
  private answerOf(call: Call, result: Record<string, unknown>): string {
    const { id, method } = call;
    const raw = rawJsonOf(result);
    if (raw !== undefined) {
      const answer = this.rawAnswer(call, result, raw);
      if (answer !== undefined) return answer;
    }
    if (call.scope.era !== 'modern') return serializeResult(id, result);
    const asked = call.channel?.round?.result;
    if (asked !== undefined) return serializeResult(id, this.modernResult(method, asked));
    if (
      result._meta === undefined &&
      result.resultType === undefined &&
      !CACHEABLE_METHODS.has(method)
    ) {
      // Hot path (tools/call, prompts/get): splice the constant 2026 fields into the JSON
      // instead of copying the result object.
      const inner = JSON.stringify(result);
      if (inner.charCodeAt(0) === 123 && inner.charCodeAt(inner.length - 1) === 125) {
        return (
          '{"jsonrpc":"2.0","id":' +
          JSON.stringify(id) +
          ',"result":' +
          (inner === '{}' ? '{' : inner.slice(0, -1) + ',') +
          this.modernSuffix +
          '}}'
        );
      }
    }
    return serializeResult(id, this.modernResult(method, result));
  }

  /** The wire error a thrown value becomes; anything unregistered is an internal error. */
  private wireErrorOf(err: unknown, scope: RequestScope): WireError {
    if (err instanceof WireError) return err;
    if (err instanceof RegistryError) {
      const key =
        err.code === 'unknown_resource' && scope.era === 'modern'
          ? 'unknown_resource_modern'
          : LOCAL_TO_WIRE[err.code];
      if (key !== undefined) {
        // 2026-07-28 made a missing resource invalid params; 2025 revisions have their own code.
        const data =
          err.code === 'unknown_resource'
            ? { uri: err.message.replace(/^Resource not found: /, '') }
            : undefined;
        const def = WIRE_ERRORS[key];
        return new WireError(def.code, err.message, data, def.status, key);
      }
    }
    this.opts.onError?.(err);
    return wireError('internal_error');
  }

  private errorAnswer(call: Call, err: unknown): string {
    const wire = this.wireErrorOf(err, call.scope);
    // Transports that map codes to statuses (2026-07-28 over HTTP) read it from the channel.
    if (call.channel !== undefined && modernStatusOf(wire.code) !== 200)
      call.channel.errorCode = wire.code;
    if (call.observed !== undefined) call.observed.errorCode = wire.code;
    return serializeError(call.id, wire.code, wire.message, wire.data);
  }

  private handlerOf(method: string, scope: RequestScope): MethodHandler | undefined {
    const methods = this.methods;
    const handler = Object.hasOwn(methods, method) ? methods[method] : undefined;
    if (handler === undefined) return undefined;
    if (scope.era === 'modern') return MODERN_METHODS.has(method) ? handler : undefined;
    return method !== 'server/discover' && method !== 'subscriptions/listen' ? handler : undefined;
  }

  private async run(call: Call, handler: MethodHandler): Promise<string> {
    const { scope, channel, id, method, observed } = call;
    const session = scope.session;
    if (channel && session) {
      // An id reused while its call runs would take the call's place here: the first call could
      // then no longer be cancelled, nor be stopped when the session ends.
      if (session.inflight.has(id))
        return this.errorAnswer(call, wireError('request_id_in_use', { id: JSON.stringify(id) }));
      session.inflight.set(id, channel);
    }
    try {
      call.filter = this.opts.filterFor?.(scope);
      if (
        scope.era === 'modern' &&
        channel !== undefined &&
        (call.params.inputResponses !== undefined || call.params.requestState !== undefined) &&
        INPUT_METHODS.has(method)
      ) {
        const binding = inputBinding(method, call.params, scope.principal);
        channel.round = resumeRound(call.params, binding, channel, this.states);
      }
      // A list page answered before, for this view and registry version: only the id is new.
      const listed = this.lists !== undefined && channel?.round === undefined;
      const version = listed ? this.lists!.versionOf(method) : undefined;
      if (version !== undefined) {
        const hit = this.lists!.get(method, call.filter, scope.era, call.params.cursor);
        if (hit !== undefined) {
          if (observed !== undefined) observed.outcome = 'ok';
          return resultPrefix(id) + hit + '}';
        }
      }
      let result = handler(call);
      if (result instanceof Promise) result = await result;
      if (channel?.cutOff !== undefined) throw channel.cutOff;
      if (!isPlainObject(result)) throw localError('handler_result_invalid', { method });
      if (observed !== undefined) observed.outcome = outcomeOf(result, call);
      const answer = this.answerOf(call, result);
      if (version !== undefined) {
        const json = answer.slice(resultPrefix(id).length, -1);
        this.lists!.set(method, call.filter, scope.era, call.params.cursor, version, json);
      }
      return answer;
    } catch (err) {
      // A handler stopped because its input round ended (prompts/get, resources/read throw).
      const asked = channel?.round?.result;
      if (asked !== undefined && scope.era === 'modern') {
        if (observed !== undefined) observed.outcome = 'input_required';
        return serializeResult(id, this.modernResult(method, asked));
      }
      if (observed !== undefined) observed.outcome = 'error';
      return this.errorAnswer(call, channel?.cutOff ?? err);
    } finally {
      if (channel && session && session.inflight.get(id) === channel) session.inflight.delete(id);
      // Server requests the client never answered must not outlive the call (they wait on it).
      if (channel?.askedClient) channel.abort(localError('call_ended'));
    }
  }

  handleRequest(msg: JsonRpcRequest, scope: RequestScope, channel?: RequestChannel) {
    const { id, method } = msg;
    const observer = this.observer;
    const observed =
      observer === undefined
        ? undefined
        : observeStart(observer, scope, 'http', undefined, id, method, msg.params);
    const handler = this.handlerOf(method, scope);
    if (handler === undefined) {
      const err = wireError('method_not_found', { method });
      if (channel !== undefined) channel.errorCode = err.code;
      if (observed !== undefined) observeEnd(observer!, observed, 'error', err.code);
      return Promise.resolve(serializeError(id, err.code, err.message));
    }
    const params = msg.params ?? EMPTY;
    const call: Call = { id, method, params, scope, channel, filter: undefined, observed };
    if (observed === undefined) return this.run(call, handler);
    return this.run(call, handler).then((out) => {
      observeEnd(observer!, observed, observed.outcome ?? 'ok', observed.errorCode);
      return out;
    });
  }

  handleNotification(msg: JsonRpcNotification, scope: RequestScope): void {
    const session = scope.session;
    if (session === undefined) return;
    if (msg.method === 'notifications/initialized') {
      session.initialized = true;
    } else if (msg.method === 'notifications/cancelled') {
      const requestId = msg.params?.requestId;
      if (typeof requestId !== 'string' && typeof requestId !== 'number') return;
      const ctl = session.inflight.get(requestId);
      if (ctl === undefined) return;
      session.inflight.delete(requestId);
      ctl.abort(
        localError('cancelled', {
          reason: typeof msg.params?.reason === 'string' ? msg.params.reason : 'cancelled',
        }),
      );
    }
    // Unknown notifications are ignored, as JSON-RPC asks.
  }

  handleResponse(msg: Record<string, unknown>, session: SessionState): boolean {
    return settleOutgoing(session, msg);
  }
}

function outcomeOf(result: Record<string, unknown>, call: Call): ObservedCall['outcome'] {
  if (call.channel?.round?.result !== undefined) return 'input_required';
  return call.method === 'tools/call' && result.isError === true ? 'tool_error' : 'ok';
}

/** What every successful answer starts with (serializeResult and the hot-path splice alike). */
function resultPrefix(id: JsonRpcId): string {
  return '{"jsonrpc":"2.0","id":' + JSON.stringify(id) + ',"result":';
}

/** `members` (JSON text without braces) added to the object text `obj`. */
function splice(obj: string, members: string): string {
  return obj === '{}' ? '{' + members + '}' : obj.slice(0, -1) + ',' + members + '}';
}

function onlyServerInfo(meta: unknown): boolean {
  if (!isPlainObject(meta)) return false;
  for (const k in meta) if (k !== SERVER_INFO_META_KEY) return false;
  return true;
}

const EMPTY: Record<string, unknown> = Object.freeze({}) as Record<string, unknown>;
export type { JsonRpcId };
