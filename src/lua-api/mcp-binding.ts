/**
 * The binding context the `mcp` registry functions share (mcp-tools.ts, mcp-prompts.ts,
 * mcp-resources.ts, installed together by mcp-registry.ts): the plugin's state, registry and
 * owner, the context of a call made from Lua, running a Lua handler within the plugin's limits,
 * and the bound on registrations.
 */
import type { CallLimits, HostCall, LuaState } from '../lua/state.js';
import { LuaArgumentError } from '../lua/errors.js';
import type { Registry } from '../registry/registry.js';
import type { CallContext, OwnerFilter } from '../registry/types.js';
import { callWithContext } from './context.js';
import { activeHandlerContext, nestedContext } from './nested-call.js';
import { contextFields } from './botster-compat.js';
import { innerNameRefusal } from './inner-refusals.js';
import { CallsInFlight } from './calls-in-flight.js';
import {
  droppedUpdates,
  handlerFailure,
  PLUGIN_LIMIT_KEYS,
  RateGate,
  resolvePluginLimits,
  type PluginLimits,
} from './plugin-limits.js';

export interface RegistryBindingOptions {
  registry: Registry;
  /** The plugin that owns what this state registers. */
  owner: string;
  /** A session's view, for `mcp.list_tools(session_uuid)`; null for an unknown session. */
  sessionViews?: SessionViews;
  /** Result, error and registration bounds (plugin-limits.ts defaults when absent). */
  limits?: PluginLimits;
  /** Told (a log line) how many `mcp.resource_updated` calls its rate dropped. */
  warn?: (message: string) => void;
  /** Told of each call refused by a limit (its metric label), for the hub's refusal counter. */
  refused?: (limit: string) => void;
  /**
   * The state's tool calls in flight, shared with `mcp.call` and `tools.use`: `mcp.call_tool`
   * takes a place of the same bound (unbounded when absent).
   */
  flight?: CallsInFlight;
}

/** What a session (by its uuid) may see: its owner filter, or null when there is no such session. */
export type SessionViews = (session_uuid: string) => OwnerFilter | null;

/** One plugin state's registry bindings: what their closures share. */
export class RegistryBinding {
  readonly registry: Registry;
  readonly owner: string;
  readonly sessionViews: SessionViews | undefined;
  private readonly limits: PluginLimits;
  /**
   * Names this state registered, so a plugin registering in a loop is stopped at its bound. The
   * set may hold names removed since; at the bound it is rebuilt from the registry first.
   */
  private readonly registered = new Set<string>();
  /** `mcp.resource_updated`'s rate: each call is work on the hub's thread, whoever listens. */
  readonly updates: RateGate;
  private readonly refused: ((limit: string) => void) | undefined;
  /** The tool calls in flight of the state (`plugin_limits.calls_in_flight`). */
  readonly flight: CallsInFlight;

  constructor(
    readonly state: LuaState,
    opts: RegistryBindingOptions,
  ) {
    this.registry = opts.registry;
    this.owner = opts.owner;
    this.sessionViews = opts.sessionViews;
    this.limits = opts.limits ?? resolvePluginLimits();
    this.refused = opts.refused;
    this.flight = opts.flight ?? new CallsInFlight();
    const limits = this.limits;
    this.updates = new RateGate(limits.resourceUpdatesPerSecond, (n) =>
      opts.warn?.(droppedUpdates(n, limits)),
    );
  }

  /**
   * The context of a registry call made from Lua. Inside a handler it is the handler's caller
   * (nested-call.ts), whatever table the code passes; elsewhere (a plugin's top level, a script)
   * the given table describes the caller, and a session of ours keeps its view (LUA_API §2.1).
   */
  contextFor(call: HostCall, given: unknown): CallContext {
    const outer = activeHandlerContext(call.state);
    // The table's other fields (Botster's workspace_id, branch_name, ...) reach the handler.
    const fields = contextFields(givenTable(given));
    if (outer !== undefined) {
      const nested = nestedContext(outer, this.owner);
      if (fields !== undefined) nested.fields = fields;
      return nested;
    }
    const ctx = contextFromLua(given, this.registry, this.owner);
    if (fields !== undefined) ctx.fields = fields;
    const view =
      ctx.session_uuid === undefined || this.sessionViews === undefined
        ? null
        : this.sessionViews(ctx.session_uuid);
    if (view !== null && view !== undefined) ctx.filter = view;
    return ctx;
  }

  /**
   * Runs the Lua handler behind `ref` for one request: its input, the caller's context, limits.
   * A result too large to read, or an error message too long, fails with the bound named.
   */
  async invoke(
    ref: number,
    timeoutMs: number | undefined,
    input: unknown,
    ctx: CallContext,
  ): Promise<unknown> {
    try {
      return (
        await callWithContext(
          this.state,
          ref,
          [input],
          ctx,
          limitsFor(timeoutMs, ctx, this.limits.resultBytes),
        )
      )[0];
    } catch (err) {
      throw handlerFailure(err, this.limits);
    }
  }

  /**
   * The refusal of a call by name (`mcp.call_tool`, `mcp.get_prompt`: `what` names which) past the
   * front door's `limits.name_length`, counted; undefined when the name is within it.
   */
  nameRefusal(name: string, what = 'a tool name'): string | undefined {
    return this.counted(innerNameRefusal(name, this.limits.nameLength, what)?.message);
  }

  /** The same for `mcp.read_resource`'s URI and `limits.subscriptions.uri_length`. */
  uriRefusal(uri: string): string | undefined {
    const key = PLUGIN_LIMIT_KEYS.uriLength;
    return this.counted(
      innerNameRefusal(uri, this.limits.uriLength, 'a resource URI', key)?.message,
    );
  }

  /** A refusal counted under the front door's label for both bounds (`name_length`). */
  private counted(message: string | undefined): string | undefined {
    if (message !== undefined) this.refused?.('name_length');
    return message;
  }

  /** Counts a registration under `key` against the plugin's bound, or raises at the bound. */
  admitRegistration(key: string): void {
    const { registered, limits, registry } = this;
    if (registered.has(key) || registered.size < limits.registrations) {
      registered.add(key);
      return;
    }
    registered.clear();
    const mine = (o: string) => o === this.owner;
    for (const t of registry.listTools(mine)) registered.add(`tool:${t.name}`);
    for (const p of registry.listPrompts(mine)) registered.add(`prompt:${p.name}`);
    for (const r of registry.listResources(mine)) registered.add(`resource:${r.uri}`);
    for (const r of registry.listResourceTemplates(mine))
      registered.add(`resource:${r.uriTemplate}`);
    if (!registered.has(key) && registered.size >= limits.registrations) {
      throw new LuaArgumentError(
        `registration limit exceeded: a plugin may register at most ${limits.registrations} tools, prompts and resources (${PLUGIN_LIMIT_KEYS.registrations})`,
      );
    }
    registered.add(key);
  }
}

/** A string field of a Lua table, or undefined. */
export function str(v: unknown): string | undefined {
  return typeof v === 'string' ? v : undefined;
}

export function describeFailure(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** A context table passed from Lua, as a record (anything else: empty). */
function givenTable(value: unknown): Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : {};
}

/** The context of a call made from Lua: the caller's table, with the hub's facts filled in. */
function contextFromLua(value: unknown, registry: Registry, owner: string): CallContext {
  const given = givenTable(value);
  const ctx: CallContext = { hub_id: registry.hubId, plugin: owner };
  for (const key of ['session_uuid', 'agent_name', 'target', 'principal'] as const) {
    if (typeof given[key] === 'string') ctx[key] = given[key];
  }
  if (typeof given.request_id === 'string' || typeof given.request_id === 'number')
    ctx.request_id = given.request_id;
  return ctx;
}

/**
 * A handler's call limits with the signal read only when the call first waits: reading
 * `ctx.signal` makes the transport build an AbortController and a 'close' listener, which cost
 * ~5 % of a tools/call that never waits (`npm run bench -- --profile`). A class, so the getter
 * sits on one shared prototype instead of being defined on every call's object.
 */
class LazySignalLimits implements CallLimits {
  constructor(
    readonly timeoutMs: number | undefined,
    private readonly ctx: CallContext,
    readonly resultBytes?: number,
  ) {}

  get signal(): AbortSignal | undefined {
    return this.ctx.signal;
  }

  /** The handler's context, for calls made from inside it (nested-call.ts). */
  get tag(): CallContext {
    return this.ctx;
  }
}

function limitsFor(
  timeoutMs: number | undefined,
  ctx: CallContext,
  resultBytes?: number,
): CallLimits {
  return new LazySignalLimits(timeoutMs, ctx, resultBytes);
}
