/**
 * What a plugin worker asks of the hub's thread, answered there: lists and counts (synchronous),
 * calls into the registry, the caller's client, and the plugin's upstream proxies (which live on
 * this thread). A call from the worker acts for the hub call it belongs to (its client, view and
 * cancellation), for a session's view, or for the plugin itself; never wider than its caller.
 */
import type { Logger } from '../log.js';
import { contextFields } from '../lua-api/botster-compat.js';
import type { SessionViews } from '../lua-api/index.js';
import { wasRaised, type Registry } from '../registry/registry.js';
import type { CallContext, CallPeer, OwnerFilter } from '../registry/types.js';
import { upstreamsOf } from '../upstream/manager.js';
import type { ProxyOptions } from '../upstream/proxy.js';
import { callerPart } from './remote-registry.js';
import type { FromWorker, Origin, SyncRequest, ToWorker } from './worker-protocol.js';

export interface AnswerSource {
  registry: Registry;
  owner: string;
  logger: Logger;
  sessionViews?: SessionViews;
  /** What the plugin's proxies are declared by (the plugin, across restarts). */
  declaredBy: object;
  /** A running call's context on this thread, by the id the worker knows it by. */
  live(id: number): CallContext | undefined;
  /** A finished call's context (a task it spawned may still act for it). */
  finished(id: number): CallContext | undefined;
  /**
   * Runs `fn` in the async context of the running hub call `id` (so a trace or any other
   * AsyncLocalStorage store of the caller follows a nested call made from the worker).
   */
  inCall<T>(id: number | undefined, fn: () => T): T;
  /** Runs a proxy's Lua callback in the worker. */
  callback(url: string, which: 'transform' | 'auth', args: unknown[]): Promise<unknown>;
}

/** A finished call's client: it can no longer be told or asked anything. */
const ENDED_PEER: CallPeer = {
  clientCapabilities: undefined,
  progress: () => false,
  log: () => undefined,
  request: () =>
    Promise.reject(new Error('the call this code acts for has ended: its client cannot be asked')),
  pollLater: () => false,
};

/**
 * What a finished call leaves to the tasks it spawned (actingFor): who called, in which view,
 * and a client that can no longer be reached. Never the call's own context: that holds its
 * whole request (body, channel, HTTP objects), and keeping the last calls' contexts kept every
 * call alive past the young generation's collections (docs/performance.md, "Session 9").
 */
export function endedContext(ctx: CallContext): CallContext {
  const out: CallContext = callerPart(ctx);
  if (ctx.request_id !== undefined) out.request_id = ctx.request_id;
  if (ctx.filter !== undefined) out.filter = ctx.filter;
  // Read without calling a lazy getter (which would make the peer just to drop it).
  const peer = Object.getOwnPropertyDescriptor(ctx, 'peer');
  if (peer !== undefined && (peer.get !== undefined || peer.value !== undefined))
    out.peer = ENDED_PEER;
  return out;
}

export class HubAnswers {
  constructor(private readonly src: AnswerSource) {}

  /** The context and view a call from the worker acts with. */
  actingFor(
    origin: Origin,
    given: CallContext | undefined,
  ): { ctx: CallContext; view: OwnerFilter } {
    const base: CallContext = { ...(given ?? {}), hub_id: this.src.registry.hubId };
    // A Lua caller's other context fields pass on, checked here too (bounded, never identity).
    const fields = given?.fields === undefined ? undefined : contextFields(given.fields);
    if (fields === undefined) delete base.fields;
    else base.fields = fields;
    if (origin.call !== undefined) {
      const live = this.src.live(origin.call);
      const outer = live ?? this.src.finished(origin.call);
      // Never wider than the caller: a call whose caller is forgotten is refused.
      if (!outer) throw new Error('the call this code acts for has ended');
      // Who is asking is the call's caller as this thread knows it (as nested-call.ts does).
      for (const k of [
        'session_uuid',
        'agent_name',
        'target',
        'principal',
        'request_id',
      ] as const) {
        if (outer[k] === undefined) delete base[k];
        else (base as unknown as Record<string, unknown>)[k] = outer[k];
      }
      base.plugin = this.src.owner;
      delete base.uri;
      if (outer.peer !== undefined) base.peer = outer.peer;
      if (outer.filter !== undefined) base.filter = outer.filter;
      if (live) Object.defineProperty(base, 'signal', { get: () => live.signal, enumerable: true });
      return { ctx: base, view: outer.filter };
    }
    if (origin.session !== undefined) {
      const view = this.src.sessionViews?.(origin.session);
      if (view === null) throw new Error('unknown session');
      if (view !== undefined) base.filter = view;
      return { ctx: base, view };
    }
    return { ctx: base, view: undefined };
  }

  answerSync(req: SyncRequest): unknown {
    const { registry, sessionViews } = this.src;
    switch (req.op) {
      case 'sessionView': {
        const view = sessionViews?.(String(req.args[0]));
        if (view === null || sessionViews === undefined) return 'none';
        return view === undefined ? 'all' : 'view';
      }
      case 'progress': {
        const [p, total, message] = req.args as [number, number | undefined, string | undefined];
        return this.src.live(req.origin.call ?? -1)?.peer?.progress(p, total, message) ?? false;
      }
      case 'pollLater':
        return (
          this.src.live(req.origin.call ?? -1)?.peer?.pollLater?.(Number(req.args[0])) ?? false
        );
      case 'proxyExists':
        return upstreamsOf(registry).get(this.src.owner, String(req.args[0])) !== undefined;
    }
    const { view } = this.actingFor(req.origin, undefined);
    switch (req.op) {
      case 'listTools':
        return registry.listTools(view);
      case 'countTools':
        return registry.countTools(view);
      case 'listPrompts':
        return registry.listPrompts(view);
      case 'countPrompts':
        return registry.countPrompts(view);
      case 'listResources':
        return registry.listResources(view);
      case 'listResourceTemplates':
        return registry.listResourceTemplates(view);
      case 'countResources':
        return registry.countResources(view);
    }
  }

  /** Answers a request of the worker: the 'answer' message to send back, never a rejection. */
  async answer(msg: Extract<FromWorker, { type: 'request' }>): Promise<ToWorker> {
    try {
      return { type: 'answer', id: msg.id, ok: true, value: await this.request(msg) };
    } catch (err) {
      const e = err as Error & { code?: string };
      return { type: 'answer', id: msg.id, ok: false, error: e.message, code: e.code };
    }
  }

  request(msg: Extract<FromWorker, { type: 'request' }>): Promise<unknown> {
    const { registry, owner } = this.src;
    const [a, b] = msg.args;
    switch (msg.op) {
      case 'peerRequest': {
        const peer = this.src.live(msg.origin.call ?? -1)?.peer;
        if (!peer) return Promise.reject(new Error('the call has no client to ask'));
        const [method, params, opts] = msg.args as Parameters<
          NonNullable<CallContext['peer']>['request']
        >;
        return peer.request(method, params, opts);
      }
      case 'proxy':
        return this.proxy(msg.args);
      case 'removeProxy':
        return upstreamsOf(registry).remove(owner, String(a));
      case 'settleUpstreams': {
        const manager = upstreamsOf(registry);
        return a === null ? manager.stop() : manager.settleOwner(String(a), undefined);
      }
    }
    const { ctx, view } = this.actingFor(msg.origin, msg.ctx as CallContext | undefined);
    return this.src.inCall(msg.origin.call, (): Promise<unknown> => {
      switch (msg.op) {
        case 'callTool':
          // The raised mark is a symbol, lost in the copy to the worker: it goes as a field.
          return registry
            .callTool(String(a), b as Record<string, unknown>, ctx, view)
            .then((result) => ({ result, raised: wasRaised(result) }));
        case 'getPrompt':
          return registry.getPrompt(String(a), b as Record<string, string>, ctx, view);
        case 'readResource':
          return registry.readResource(String(a), ctx, view);
        default:
          return Promise.reject(new Error(`unknown request: ${String(msg.op)}`));
      }
    });
  }

  /** `mcp.proxy` of the plugin: the connection made (or refreshed) here, callbacks relayed. */
  private async proxy(args: unknown[]): Promise<{ state: string; lastError?: string }> {
    const [url, data, transform, auth, settleMs] = args as [
      string,
      ProxyOptions,
      boolean,
      boolean,
      number,
    ];
    const opts: ProxyOptions = { ...data };
    if (transform) {
      opts.transformArguments = async (name, input, ctx) =>
        (await this.src.callback(url, 'transform', [name, input, plainCopy(ctx)])) as
          Record<string, unknown> | undefined;
    }
    if (auth) {
      opts.onAuthError = async (status) =>
        (await this.src.callback(url, 'auth', [status])) as Awaited<
          ReturnType<NonNullable<ProxyOptions['onAuthError']>>
        >;
    }
    const { registry, owner, logger, declaredBy } = this.src;
    const proxy = await upstreamsOf(registry).proxy(owner, url, opts, declaredBy, logger);
    await proxy.settle(settleMs);
    return { state: proxy.connection.state, lastError: proxy.connection.lastError };
  }
}

function plainCopy(ctx: CallContext): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const k of [
    'hub_id',
    'session_uuid',
    'agent_name',
    'target',
    'principal',
    'plugin',
    'request_id',
    'uri',
  ] as const) {
    if (ctx[k] !== undefined) out[k] = ctx[k];
  }
  // A Lua caller's other context fields, as the transform sees them without isolation.
  if (ctx.fields !== undefined) out.fields = { ...ctx.fields };
  return out;
}
