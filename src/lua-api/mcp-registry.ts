/**
 * The registry half of the `mcp` namespace (LUA_API §2): `mcp.tool`, `mcp.prompt`,
 * `mcp.resource` and their list/remove/call/count companions, batches and reset. Each is a thin
 * binding: arguments checked in Lua's wording, handlers kept as registry references of the
 * plugin's state, results converted by registry/results.
 */
import type { CallLimits, LuaState, HostCall, HostFunctionSpec } from '../lua/state.js';
import { LuaMulti } from '../lua/state.js';
import { LuaArgumentError } from '../lua/errors.js';
import type { Registry } from '../registry/registry.js';
import { RegistryError } from '../registry/errors.js';
import { toPromptResult, toResourceContents, toToolResult } from '../registry/results.js';
import type { CallContext, OwnerFilter, PromptArgument } from '../registry/types.js';
import { checkFunction, checkString, checkTable, optString, optTable } from './args.js';
import { callWithContext } from './context.js';
import { completerRefs, luaCompleter } from './completions.js';
import { templateVariables } from '../registry/uri-template.js';
import { closeUpstreams } from './proxy.js';
import { activeHandlerContext, nestedContext } from './nested-call.js';
import { wasRaised } from '../registry/registry.js';
import {
  contextFields,
  installCallbackForms,
  luaResourceItem,
  ownerFromSource,
} from './botster-compat.js';
import {
  handlerFailure,
  PLUGIN_LIMIT_KEYS,
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
}

/** What a session (by its uuid) may see: its owner filter, or null when there is no such session. */
export type SessionViews = (session_uuid: string) => OwnerFilter | null;

/** Keywords whose value is an array: an empty Lua table there means `[]`, not `{}`. */
const ARRAY_KEYWORDS = new Set([
  'required',
  'enum',
  'anyOf',
  'allOf',
  'oneOf',
  'prefixItems',
  'examples',
]);

/** Fixes the one ambiguity of Lua tables in JSON Schemas: `{}` where an array is meant. */
export function normalizeSchema(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(normalizeSchema);
  if (typeof schema !== 'object' || schema === null || schema instanceof Uint8Array) return schema;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(schema)) {
    if (ARRAY_KEYWORDS.has(key) && isEmptyObject(value)) out[key] = [];
    else out[key] = normalizeSchema(value);
  }
  return out;
}

function isEmptyObject(v: unknown): boolean {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && Object.keys(v).length === 0;
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

/** A tool schema's `requires`: client capability names (`{"sampling"}`) or a capability table. */
function requiredCapabilities(v: unknown): string[] | undefined {
  if (v === undefined) return undefined;
  const names = Array.isArray(v) ? v : typeof v === 'object' && v !== null ? Object.keys(v) : [v];
  if (!names.every((n) => typeof n === 'string'))
    throw new LuaArgumentError(
      "bad argument #2 to 'tool' (requires must list client capability names)",
    );
  return names.length > 0 ? (names as string[]) : undefined;
}

function str(v: unknown): string | undefined {
  return typeof v === 'string' ? v : undefined;
}

function plainObject(v: unknown, what: string): Record<string, unknown> | undefined {
  if (v === undefined) return undefined;
  if (typeof v === 'object' && v !== null && !Array.isArray(v))
    return normalizeSchema(v) as Record<string, unknown>;
  throw new LuaArgumentError(`${what} must be a table`);
}

function describeFailure(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

export function installRegistryApi(state: LuaState, opts: RegistryBindingOptions): void {
  const { registry, owner } = opts;

  /**
   * The context of a registry call made from Lua. Inside a handler it is the handler's caller
   * (nested-call.ts), whatever table the code passes; elsewhere (a plugin's top level, a script)
   * the given table describes the caller, and a session of ours keeps its view (LUA_API §2.1).
   */
  const contextFor = (call: HostCall, given: unknown): CallContext => {
    const outer = activeHandlerContext(call.state);
    // The table's other fields (Botster's workspace_id, branch_name, ...) reach the handler.
    const fields = contextFields(givenTable(given));
    if (outer !== undefined) {
      const nested = nestedContext(outer, owner);
      if (fields !== undefined) nested.fields = fields;
      return nested;
    }
    const ctx = contextFromLua(given, registry, owner);
    if (fields !== undefined) ctx.fields = fields;
    const view =
      ctx.session_uuid === undefined || opts.sessionViews === undefined
        ? null
        : opts.sessionViews(ctx.session_uuid);
    if (view !== null && view !== undefined) ctx.filter = view;
    return ctx;
  };

  const limits = opts.limits ?? resolvePluginLimits();

  /**
   * Runs the Lua handler behind `ref` for one request: its input, the caller's context, limits.
   * A result too large to read, or an error message too long, fails with the bound named.
   */
  const invoke = async (
    ref: number,
    timeoutMs: number | undefined,
    input: unknown,
    ctx: CallContext,
  ): Promise<unknown> => {
    try {
      return (
        await callWithContext(
          state,
          ref,
          [input],
          ctx,
          limitsFor(timeoutMs, ctx, limits.resultBytes),
        )
      )[0];
    } catch (err) {
      throw handlerFailure(err, limits);
    }
  };

  /**
   * Names this state registered, so a plugin registering in a loop is stopped at its bound. The
   * set may hold names removed since; at the bound it is rebuilt from the registry first.
   */
  const registered = new Set<string>();
  const admitRegistration = (key: string): void => {
    if (registered.has(key) || registered.size < limits.registrations) {
      registered.add(key);
      return;
    }
    registered.clear();
    const mine = (o: string) => o === owner;
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
  };

  const tool: HostFunctionSpec = {
    fn: (args, call) => {
      const name = checkString(args, call, 1, 'tool');
      if (name === '')
        throw new LuaArgumentError("bad argument #1 to 'tool' (tool name must not be empty)");
      const schema = checkTable(args, call, 2, 'tool') as Record<string, unknown>;
      checkFunction(call, 3, 'tool');
      const inputSchema = plainObject(
        schema.input_schema ?? schema.inputSchema,
        'input_schema',
      ) ?? {
        type: 'object',
        properties: {},
      };
      const timeoutMs = typeof schema.timeout_ms === 'number' ? schema.timeout_ms : undefined;
      admitRegistration(`tool:${name}`);
      const ref = call.ref(3);
      try {
        registry.addTool(owner, {
          name,
          description: str(schema.description) ?? '',
          title: str(schema.title),
          inputSchema,
          outputSchema: plainObject(schema.output_schema ?? schema.outputSchema, 'output_schema'),
          annotations: plainObject(schema.annotations, 'annotations'),
          icons: Array.isArray(schema.icons) ? schema.icons : undefined,
          timeoutMs,
          requiredCapabilities: requiredCapabilities(schema.requires),
          handler: async (input, ctx) => toToolResult(await invoke(ref, timeoutMs, input, ctx)),
        });
      } catch (err) {
        state.unref(ref);
        throw new LuaArgumentError(describeFailure(err));
      }
      return undefined;
    },
  };

  const prompt: HostFunctionSpec = {
    fn: (args, call) => {
      const name = checkString(args, call, 1, 'prompt');
      if (name === '')
        throw new LuaArgumentError("bad argument #1 to 'prompt' (prompt name must not be empty)");
      const schema = checkTable(args, call, 2, 'prompt') as Record<string, unknown>;
      checkFunction(call, 3, 'prompt');
      const list = Array.isArray(schema.arguments) ? schema.arguments : [];
      const promptArgs: PromptArgument[] = list.map((a, i) => {
        const arg = a as Record<string, unknown>;
        if (typeof arg?.name !== 'string') {
          throw new LuaArgumentError(
            `bad argument #2 to 'prompt' (arguments[${i + 1}].name must be a string)`,
          );
        }
        const out: PromptArgument = { name: arg.name };
        if (typeof arg.description === 'string') out.description = arg.description;
        if (typeof arg.required === 'boolean') out.required = arg.required;
        return out;
      });
      const timeoutMs = typeof schema.timeout_ms === 'number' ? schema.timeout_ms : undefined;
      const completers = completerRefs(
        call,
        promptArgs.map((a) => a.name),
        (_name, i) => ['arguments', i + 1, 'complete'],
      );
      admitRegistration(`prompt:${name}`);
      const ref = call.ref(3);
      const description = str(schema.description) ?? '';
      registry.addPrompt(owner, {
        name,
        description,
        title: str(schema.title),
        icons: Array.isArray(schema.icons) ? schema.icons : undefined,
        arguments: promptArgs,
        timeoutMs,
        complete: luaCompleter(state, completers, timeoutMs),
        handler: async (input, ctx) =>
          toPromptResult(await invoke(ref, timeoutMs, input, ctx), name, description),
      });
      return undefined;
    },
  };

  const resource: HostFunctionSpec = {
    fn: (args, call) => {
      const uri = checkString(args, call, 1, 'resource');
      if (uri === '')
        throw new LuaArgumentError("bad argument #1 to 'resource' (URI must not be empty)");
      const schema = (optTable(args, call, 2, 'resource') ?? {}) as Record<string, unknown>;
      checkFunction(call, 3, 'resource');
      const mimeType = str(schema.mime_type ?? schema.mimeType);
      const timeoutMs = typeof schema.timeout_ms === 'number' ? schema.timeout_ms : undefined;
      const completers = completerRefs(call, templateVariables(uri), (name) => ['complete', name]);
      admitRegistration(`resource:${uri}`);
      const ref = call.ref(3);
      registry.addResource(owner, {
        uriTemplate: uri,
        name: str(schema.name) ?? uri,
        title: str(schema.title),
        description: str(schema.description),
        mimeType,
        icons: Array.isArray(schema.icons) ? schema.icons : undefined,
        timeoutMs,
        complete: luaCompleter(state, completers, timeoutMs),
        handler: async (readUri, params, ctx) => ({
          contents: toResourceContents(
            await invoke(ref, timeoutMs, params, ctx),
            readUri,
            mimeType,
          ),
        }),
      });
      return undefined;
    },
  };

  let openBatches = 0;

  state.defineLibrary('mcp', {
    tool,
    remove_tool: {
      fn: (args, call) => registry.removeTool(checkString(args, call, 1, 'remove_tool')),
    },
    list_tools: {
      fn: (args, call) => {
        const session = optString(args, call, 1, 'list_tools');
        let filter: OwnerFilter;
        if (session !== undefined) {
          // undefined is a view too (everything); null means no such session.
          const view = opts.sessionViews === undefined ? null : opts.sessionViews(session);
          if (view === null) return new LuaMulti([undefined, `unknown session: ${session}`]);
          filter = view;
        }
        return registry
          .listTools(filter)
          .map((t) => ({ name: t.name, description: t.description, input_schema: t.inputSchema }));
      },
    },
    call_tool: {
      async: true,
      fn: async (args, call: HostCall) => {
        const name = checkString(args, call, 1, 'call_tool');
        const params = optTable(args, call, 2, 'call_tool') ?? {};
        const ctx = contextFor(call, args[2]);
        try {
          const result = await registry.callTool(name, params, ctx, ctx.filter);
          // As Botster: a raised error (or a refused call) is `nil, err`; an `isError` answer
          // (a proxied tool's, or a returned one) keeps its content blocks, with is_error true.
          if (result.isError && wasRaised(result)) {
            const text = result.content
              .map((c) => (typeof c.text === 'string' ? c.text : ''))
              .join('\n');
            return new LuaMulti([undefined, text || 'the tool reported an error']);
          }
          if (result.isError) return new LuaMulti([result.content, undefined, true]);
          return new LuaMulti([result.content]);
        } catch (err) {
          return new LuaMulti([undefined, describeFailure(err)]);
        }
      },
    },
    count: { fn: () => registry.countTools() },

    prompt,
    remove_prompt: {
      fn: (args, call) => registry.removePrompt(checkString(args, call, 1, 'remove_prompt')),
    },
    // As Botster: `arguments` is left out when a prompt has none.
    list_prompts: {
      fn: () =>
        registry
          .listPrompts()
          .map(({ arguments: a, ...rest }) => (a.length > 0 ? { ...rest, arguments: a } : rest)),
    },
    get_prompt: {
      async: true,
      fn: async (args, call) => {
        const name = checkString(args, call, 1, 'get_prompt');
        const input = (optTable(args, call, 2, 'get_prompt') ?? {}) as Record<string, string>;
        try {
          const ctx = contextFor(call, undefined);
          return await registry.getPrompt(name, input, ctx, ctx.filter);
        } catch (err) {
          return new LuaMulti([undefined, describeFailure(err)]);
        }
      },
    },
    count_prompts: { fn: () => registry.countPrompts() },

    resource,
    remove_resource: {
      fn: (args, call) => registry.removeResource(checkString(args, call, 1, 'remove_resource')),
    },
    list_resource_templates: {
      fn: () =>
        registry.listResourceTemplates().map((r) => ({
          uri_template: r.uriTemplate,
          uriTemplate: r.uriTemplate,
          name: r.name,
          description: r.description,
          mime_type: r.mimeType,
          mimeType: r.mimeType,
        })),
    },
    list_resources: {
      fn: () =>
        registry.listResources().map((r) => ({
          uri: r.uri,
          name: r.name,
          description: r.description,
          mime_type: r.mimeType,
          mimeType: r.mimeType,
        })),
    },
    read_resource: {
      async: true,
      fn: async (args, call) => {
        const uri = checkString(args, call, 1, 'read_resource');
        const ctx = contextFor(call, args[1]);
        try {
          const result = await registry.readResource(uri, ctx, ctx.filter);
          return result.contents.map(luaResourceItem);
        } catch (err) {
          return new LuaMulti([
            undefined,
            err instanceof RegistryError ? err.message : describeFailure(err),
          ]);
        }
      },
    },
    count_resources: { fn: () => registry.countResources() },
    resource_updated: {
      fn: (args, call) => {
        registry.resourceUpdated(checkString(args, call, 1, 'resource_updated'));
        return undefined;
      },
    },

    begin_batch: {
      fn: () => {
        registry.beginBatch();
        openBatches++;
        return undefined;
      },
    },
    end_batch: {
      fn: () => {
        // As Botster: ending a batch that was never begun does nothing.
        if (openBatches === 0) return undefined;
        openBatches--;
        registry.endBatch();
        return undefined;
      },
    },
    reset: {
      fn: (args, call) => {
        const given = optString(args, call, 1, 'reset');
        const source = given === undefined ? undefined : ownerFromSource(given);
        registry.reset(source);
        // What a reset owner imported from upstreams must not come back at the next re-import.
        void closeUpstreams(registry, source);
        return undefined;
      },
    },
    // mcp.proxy and mcp.remove_proxy: installed by ./proxy.ts (upstream servers).
  });
  installCallbackForms(state);

  // A plugin that forgets end_batch must not freeze notifications for the whole hub.
  closeOpenBatches.set(state, () => {
    while (openBatches > 0) {
      openBatches--;
      registry.endBatch();
    }
  });
}

const closeOpenBatches = new WeakMap<LuaState, () => void>();

/** Ends any batch the plugin's code left open; returns whether there was one. */
export function endForgottenBatches(state: LuaState): void {
  closeOpenBatches.get(state)?.();
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
