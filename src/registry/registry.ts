/**
 * The one registry of tools, prompts and resources. Entries carry their owner (a plugin name),
 * so a plugin's surface can be reset or rolled back as a unit. Changes made inside a batch become
 * visible to listeners together, with one event naming every kind that changed.
 */
import { HandlerError, RegistryError, type HandlerKind } from './errors.js';
import { compileValidator, type ArgumentValidator } from './schema.js';
import { matchTemplate, isTemplate } from './uri-template.js';
import type {
  CallContext,
  CompletionResult,
  EntryKind,
  OwnerFilter,
  PromptEntry,
  PromptInfo,
  PromptResult,
  PromptSpec,
  ResourceEntry,
  ResourceInfo,
  ResourceReadResult,
  ResourceSpec,
  ResourceTemplateInfo,
  ToolEntry,
  ToolInfo,
  ToolResult,
  ToolSpec,
} from './types.js';

export type ChangeListener = (kinds: ReadonlySet<EntryKind>) => void;
/** Told when a resource's content changed (`mcp.resource_updated`), for its subscribers. */
export type ResourceUpdateListener = (uri: string) => void;
/** Told when a prompt, resource or completion handler failed (the plugin's error, for the log). */
export type HandlerErrorListener = (err: HandlerError) => void;

interface ToolSlot {
  entry: ToolEntry;
  info: ToolInfo;
  validate: ArgumentValidator;
}

/** A tool resolved for one call: its entry (owner, schema, handler) and its listed info. */
export interface ResolvedTool {
  readonly entry: ToolEntry;
  readonly info: ToolInfo;
}

/** What an owner had registered, kept to put back if its reload fails. */
export interface OwnerSnapshot {
  tools: ToolSlot[];
  prompts: PromptEntry[];
  resources: ResourceEntry[];
}

export class Registry {
  readonly hubId: string;
  private readonly tools = new Map<string, ToolSlot>();
  private readonly prompts = new Map<string, PromptEntry>();
  private readonly resources = new Map<string, ResourceEntry>();
  private readonly listeners = new Set<ChangeListener>();
  private batchDepth = 0;
  private pending = new Set<EntryKind>();
  /** Bumped on every change of a kind; views cache against it. */
  readonly versions: Record<EntryKind, number> = { tools: 0, prompts: 0, resources: 0 };
  private toolListCache: { version: number; list: { owner: string; info: ToolInfo }[] } | undefined;

  constructor(opts: { hubId?: string } = {}) {
    this.hubId = opts.hubId ?? 'moonhub';
  }

  onChange(listener: ChangeListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private readonly updateListeners = new Set<ResourceUpdateListener>();
  private readonly failureListeners = new Set<HandlerErrorListener>();

  onHandlerError(listener: HandlerErrorListener): () => void {
    this.failureListeners.add(listener);
    return () => this.failureListeners.delete(listener);
  }

  /**
   * Runs a prompt, resource or completion handler; what it throws becomes a HandlerError that
   * names its owner, told to the listeners. A call stopped because its caller went away (or its
   * 2026 input round ended) is not the plugin's failure and passes through unchanged.
   */
  private async guarded<T>(
    owner: string,
    kind: HandlerKind,
    subject: string,
    ctx: CallContext,
    run: () => Promise<T>,
  ): Promise<T> {
    try {
      return await run();
    } catch (err) {
      if (ctx.signal?.aborted === true) throw err;
      const failure = new HandlerError(owner, kind, subject, err);
      for (const listener of this.failureListeners) {
        try {
          listener(failure);
        } catch {
          // A broken log listener must not change what the client is told.
        }
      }
      throw failure;
    }
  }

  onResourceUpdated(listener: ResourceUpdateListener): () => void {
    this.updateListeners.add(listener);
    return () => this.updateListeners.delete(listener);
  }

  /** Tells subscribers that the content behind `uri` changed. */
  resourceUpdated(uri: string): void {
    for (const listener of this.updateListeners) {
      try {
        listener(uri);
      } catch {
        // One broken subscriber must not keep the others from hearing about it.
      }
    }
  }

  /**
   * Answers `completion/complete` for a prompt argument (`ref/prompt`) or a template variable
   * (`ref/resource`); no `complete` handler (or an unknown ref) completes nothing.
   */
  async complete(
    ref: { type: string; name?: string; uri?: string },
    argument: string,
    value: string,
    context: Record<string, string>,
    ctx: CallContext,
    filter?: OwnerFilter,
  ): Promise<CompletionResult> {
    let handler: PromptEntry['complete'];
    if (ref.type === 'ref/prompt' && typeof ref.name === 'string') {
      const entry = this.getPromptEntry(ref.name, filter);
      if (!entry) throw new RegistryError('unknown_prompt', `Unknown prompt: ${ref.name}`);
      handler = entry.complete;
    } else if (ref.type === 'ref/resource' && typeof ref.uri === 'string') {
      const entry = this.resources.get(ref.uri);
      if (entry && (!filter || filter(entry.owner))) handler = entry.complete;
    }
    if (!handler) return { values: [], total: 0, hasMore: false };
    const owner =
      ref.type === 'ref/prompt'
        ? (this.prompts.get(ref.name!)?.owner ?? '')
        : (this.resources.get(ref.uri!)?.owner ?? '');
    const complete = handler;
    return this.guarded(owner, 'completion', ref.name ?? ref.uri ?? '', ctx, () =>
      complete(argument, value, context, ctx),
    );
  }

  // ---- batches -------------------------------------------------------------------------------

  beginBatch(): void {
    this.batchDepth++;
  }

  endBatch(): void {
    if (this.batchDepth === 0) {
      throw new RegistryError('batch_mismatch', 'end_batch called without a matching begin_batch');
    }
    this.batchDepth--;
    if (this.batchDepth === 0) this.flush();
  }

  /** Runs `fn` inside a batch, closing the batch whatever happens. */
  async batch<T>(fn: () => Promise<T> | T): Promise<T> {
    this.beginBatch();
    try {
      return await fn();
    } finally {
      this.endBatch();
    }
  }

  private changed(kind: EntryKind): void {
    this.versions[kind]++;
    this.pending.add(kind);
    if (this.batchDepth === 0) this.flush();
  }

  private flush(): void {
    if (this.pending.size === 0) return;
    const kinds = this.pending;
    this.pending = new Set();
    for (const listener of this.listeners) {
      try {
        listener(kinds);
      } catch {
        // A broken listener must not stop the others or the registration that triggered it.
      }
    }
  }

  // ---- tools ---------------------------------------------------------------------------------

  addTool(owner: string, spec: ToolSpec): void {
    if (!spec.name) throw new RegistryError('invalid_definition', 'a tool needs a non-empty name');
    const validate = compileValidator(spec.inputSchema, `tool '${spec.name}'`);
    const info: ToolInfo = {
      name: spec.name,
      description: spec.description,
      inputSchema: spec.inputSchema,
    };
    if (spec.title !== undefined) info.title = spec.title;
    if (spec.outputSchema !== undefined) info.outputSchema = spec.outputSchema;
    if (spec.annotations !== undefined) info.annotations = spec.annotations;
    if (spec.icons !== undefined) info.icons = spec.icons;
    this.tools.set(spec.name, { entry: { ...spec, owner }, info, validate });
    this.changed('tools');
  }

  /** Removes a tool; with `owner`, only when that owner holds it. Returns whether it existed. */
  removeTool(name: string, owner?: string): boolean {
    const slot = this.tools.get(name);
    if (!slot || (owner !== undefined && slot.entry.owner !== owner)) return false;
    this.tools.delete(name);
    this.changed('tools');
    return true;
  }

  getTool(name: string, filter?: OwnerFilter): ToolEntry | undefined {
    const slot = this.tools.get(name);
    if (!slot || (filter && !filter(slot.entry.owner))) return undefined;
    return slot.entry;
  }

  /** Tools as `tools/list` shows them, sorted by name; cached until the tools change. */
  listTools(filter?: OwnerFilter): ToolInfo[] {
    const all = this.toolList();
    if (!filter) return all.map((t) => t.info);
    return all.filter((t) => filter(t.owner)).map((t) => t.info);
  }

  private toolList(): { owner: string; info: ToolInfo }[] {
    if (this.toolListCache?.version !== this.versions.tools) {
      const list = [...this.tools.values()]
        .map((s) => ({ owner: s.entry.owner, info: s.info }))
        .sort((a, b) => (a.info.name < b.info.name ? -1 : a.info.name > b.info.name ? 1 : 0));
      this.toolListCache = { version: this.versions.tools, list };
    }
    return this.toolListCache.list;
  }

  countTools(filter?: OwnerFilter): number {
    if (!filter) return this.tools.size;
    let n = 0;
    for (const slot of this.tools.values()) if (filter(slot.entry.owner)) n++;
    return n;
  }

  /**
   * The tool `name` as the caller's view sees it, resolved once for a call: undefined when it
   * does not exist or is outside the view (a hidden tool is an unknown one).
   */
  findTool(name: string, filter?: OwnerFilter): ResolvedTool | undefined {
    const slot = this.tools.get(name);
    if (!slot || (filter && !filter(slot.entry.owner))) return undefined;
    return slot;
  }

  /**
   * Calls a tool after checking its arguments against its input schema. An unknown (or
   * invisible) name throws `unknown_tool`; bad arguments and handler failures come back as
   * `isError` results, as MCP asks for tool execution errors.
   */
  callTool(
    name: string,
    args: Record<string, unknown> | undefined,
    ctx: CallContext,
    filter?: OwnerFilter,
  ): Promise<ToolResult> {
    const tool = this.findTool(name, filter);
    if (tool === undefined)
      return Promise.reject(new RegistryError('unknown_tool', `Unknown tool: ${name}`));
    return this.callResolved(tool, args, ctx, filter);
  }

  /** Calls a tool `findTool` resolved (in the same view `filter`). */
  async callResolved(
    tool: ResolvedTool,
    args: Record<string, unknown> | undefined,
    ctx: CallContext,
    filter?: OwnerFilter,
  ): Promise<ToolResult> {
    const slot = tool as ToolSlot;
    const input = args ?? {};
    const problem = slot.validate(input);
    if (problem !== undefined) {
      return failureResult(`Invalid arguments for tool '${slot.info.name}': ${problem}`);
    }
    try {
      return await slot.entry.handler(input, withView(ctx, filter));
    } catch (err) {
      return failureResult(err instanceof Error ? err.message : String(err));
    }
  }

  // ---- prompts -------------------------------------------------------------------------------

  addPrompt(owner: string, spec: PromptSpec): void {
    if (!spec.name)
      throw new RegistryError('invalid_definition', 'a prompt needs a non-empty name');
    this.prompts.set(spec.name, { ...spec, owner });
    this.changed('prompts');
  }

  removePrompt(name: string, owner?: string): boolean {
    const entry = this.prompts.get(name);
    if (!entry || (owner !== undefined && entry.owner !== owner)) return false;
    this.prompts.delete(name);
    this.changed('prompts');
    return true;
  }

  getPromptEntry(name: string, filter?: OwnerFilter): PromptEntry | undefined {
    const entry = this.prompts.get(name);
    if (!entry || (filter && !filter(entry.owner))) return undefined;
    return entry;
  }

  listPrompts(filter?: OwnerFilter): PromptInfo[] {
    return [...this.prompts.values()]
      .filter((p) => !filter || filter(p.owner))
      .sort(byKey((p) => p.name))
      .map((p) => {
        const info: PromptInfo = {
          name: p.name,
          description: p.description,
          arguments: p.arguments,
        };
        if (p.title !== undefined) info.title = p.title;
        if (p.icons !== undefined) info.icons = p.icons;
        return info;
      });
  }

  countPrompts(filter?: OwnerFilter): number {
    return filter ? this.listPrompts(filter).length : this.prompts.size;
  }

  /** Renders a prompt; missing required arguments throw `invalid_arguments`. */
  async getPrompt(
    name: string,
    args: Record<string, string> | undefined,
    ctx: CallContext,
    filter?: OwnerFilter,
  ): Promise<PromptResult> {
    const entry = this.getPromptEntry(name, filter);
    if (!entry) throw new RegistryError('unknown_prompt', `Unknown prompt: ${name}`);
    const given = args ?? {};
    for (const arg of entry.arguments) {
      if (arg.required && (given[arg.name] === undefined || given[arg.name] === null)) {
        throw new RegistryError(
          'invalid_arguments',
          `Prompt '${name}' needs the argument '${arg.name}'`,
        );
      }
    }
    for (const [key, value] of Object.entries(given)) {
      if (typeof value !== 'string') {
        throw new RegistryError(
          'invalid_arguments',
          `Prompt '${name}': argument '${key}' must be a string`,
        );
      }
    }
    return this.guarded(entry.owner, 'prompt', name, ctx, () => entry.handler(given, ctx));
  }

  // ---- resources -----------------------------------------------------------------------------

  addResource(owner: string, spec: ResourceSpec): void {
    if (!spec.uriTemplate) {
      throw new RegistryError('invalid_definition', 'a resource needs a non-empty URI or template');
    }
    this.resources.set(spec.uriTemplate, {
      ...spec,
      owner,
      isTemplate: isTemplate(spec.uriTemplate),
    });
    this.changed('resources');
  }

  removeResource(uriTemplate: string, owner?: string): boolean {
    const entry = this.resources.get(uriTemplate);
    if (!entry || (owner !== undefined && entry.owner !== owner)) return false;
    this.resources.delete(uriTemplate);
    this.changed('resources');
    return true;
  }

  listResources(filter?: OwnerFilter): ResourceInfo[] {
    return [...this.resources.values()]
      .filter((r) => !r.isTemplate && (!filter || filter(r.owner)))
      .sort(byKey((r) => r.uriTemplate))
      .map((r) => describeResource({ uri: r.uriTemplate }, r));
  }

  listResourceTemplates(filter?: OwnerFilter): ResourceTemplateInfo[] {
    return [...this.resources.values()]
      .filter((r) => r.isTemplate && (!filter || filter(r.owner)))
      .sort(byKey((r) => r.uriTemplate))
      .map((r) => describeResource({ uriTemplate: r.uriTemplate }, r));
  }

  countResources(filter?: OwnerFilter): number {
    let n = 0;
    for (const r of this.resources.values()) if (!filter || filter(r.owner)) n++;
    return n;
  }

  /** Finds the entry serving `uri`: a fixed URI first, then the first template that matches. */
  resolveResource(
    uri: string,
    filter?: OwnerFilter,
  ): { entry: ResourceEntry; params: Record<string, string> } | undefined {
    const fixed = this.resources.get(uri);
    if (fixed && !fixed.isTemplate && (!filter || filter(fixed.owner))) {
      return { entry: fixed, params: {} };
    }
    for (const entry of this.resources.values()) {
      if (!entry.isTemplate || (filter && !filter(entry.owner))) continue;
      const params = matchTemplate(entry.uriTemplate, uri);
      if (params) return { entry, params };
    }
    return undefined;
  }

  async readResource(
    uri: string,
    ctx: CallContext,
    filter?: OwnerFilter,
  ): Promise<ResourceReadResult> {
    const found = this.resolveResource(uri, filter);
    if (!found) throw new RegistryError('unknown_resource', `Resource not found: ${uri}`);
    const { entry, params } = found;
    const readCtx = { ...ctx, uri };
    return this.guarded(entry.owner, 'resource', uri, readCtx, () =>
      entry.handler(uri, params, readCtx),
    );
  }

  // ---- owners --------------------------------------------------------------------------------

  /** Removes everything `owner` registered; `undefined` clears the registry. */
  reset(owner?: string): void {
    this.beginBatch();
    try {
      for (const [name, slot] of this.tools) {
        if (owner === undefined || slot.entry.owner === owner) {
          this.tools.delete(name);
          this.changed('tools');
        }
      }
      for (const [name, entry] of this.prompts) {
        if (owner === undefined || entry.owner === owner) {
          this.prompts.delete(name);
          this.changed('prompts');
        }
      }
      for (const [key, entry] of this.resources) {
        if (owner === undefined || entry.owner === owner) {
          this.resources.delete(key);
          this.changed('resources');
        }
      }
    } finally {
      this.endBatch();
    }
  }

  snapshotOwner(owner: string): OwnerSnapshot {
    return {
      tools: [...this.tools.values()].filter((s) => s.entry.owner === owner),
      prompts: [...this.prompts.values()].filter((p) => p.owner === owner),
      resources: [...this.resources.values()].filter((r) => r.owner === owner),
    };
  }

  /** Puts an owner's surface back as it was when `snapshot` was taken. */
  restoreOwner(owner: string, snapshot: OwnerSnapshot): void {
    this.beginBatch();
    try {
      this.reset(owner);
      for (const slot of snapshot.tools) {
        this.tools.set(slot.entry.name, slot);
        this.changed('tools');
      }
      for (const p of snapshot.prompts) {
        this.prompts.set(p.name, p);
        this.changed('prompts');
      }
      for (const r of snapshot.resources) {
        this.resources.set(r.uriTemplate, r);
        this.changed('resources');
      }
    } finally {
      this.endBatch();
    }
  }

  owners(): Set<string> {
    const out = new Set<string>();
    for (const s of this.tools.values()) out.add(s.entry.owner);
    for (const p of this.prompts.values()) out.add(p.owner);
    for (const r of this.resources.values()) out.add(r.owner);
    return out;
  }
}

/**
 * The context a handler gets: the caller's view travels in `ctx.filter`, so calls a handler makes
 * on the caller's behalf (execute, mcp.call) are authorized the same way. Own getters (the
 * dispatcher's lazy `signal`) are kept as getters.
 */
function withView(ctx: CallContext, filter: OwnerFilter): CallContext {
  if (filter === undefined || ctx.filter !== undefined) return ctx;
  const descriptors = Object.getOwnPropertyDescriptors(ctx);
  return Object.defineProperties(
    {},
    {
      ...descriptors,
      filter: { value: filter, enumerable: true, writable: true, configurable: true },
    },
  ) as CallContext;
}

export function errorResult(message: string): ToolResult {
  return { content: [{ type: 'text', text: message }], isError: true };
}

/**
 * Marks a tool error that the handler raised (or the hub made: bad arguments, an unreachable
 * upstream), as opposed to an `isError` result the tool returned as its answer. Lua's
 * `mcp.call_tool` answers the first with `nil, err` and the second with its content blocks and
 * `is_error = true`, as Botster does. Not enumerable: it never reaches the wire.
 */
export const RAISED: unique symbol = Symbol('moonhub.raised');

export function failureResult(message: string): ToolResult {
  const result = errorResult(message);
  Object.defineProperty(result, RAISED, { value: true });
  return result;
}

export function wasRaised(result: ToolResult): boolean {
  return (result as { [RAISED]?: boolean })[RAISED] === true;
}

function byKey<T>(key: (v: T) => string): (a: T, b: T) => number {
  return (a, b) => {
    const x = key(a);
    const y = key(b);
    return x < y ? -1 : x > y ? 1 : 0;
  };
}

function describeResource<T extends object>(
  head: T,
  r: ResourceEntry,
): T & Omit<ResourceInfo, 'uri'> {
  const out: T & Omit<ResourceInfo, 'uri'> = { ...head, name: r.name };
  if (r.title !== undefined) out.title = r.title;
  if (r.description !== undefined) out.description = r.description;
  if (r.mimeType !== undefined) out.mimeType = r.mimeType;
  if (r.icons !== undefined) out.icons = r.icons;
  return out;
}
