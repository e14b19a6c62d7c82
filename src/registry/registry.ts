/**
 * The one registry of tools, prompts and resources. Entries carry their owner (a plugin name),
 * so a plugin's surface can be reset or rolled back as a unit. Changes made inside a batch become
 * visible to listeners together, with one event naming every kind that changed.
 */
import { withView } from './entry-views.js';
import { PromptShelf } from './prompt-shelf.js';
import { ResourceShelf } from './resource-shelf.js';
import { RegistryError } from './errors.js';
import {
  RegistryEvents,
  type ChangeListener,
  type HandlerErrorListener,
  type DefinitionWarningListener,
  type ResourceUpdateListener,
} from './registry-events.js';
import {
  MAX_COMPILED_SCHEMA_MEMBERS,
  toolValidator,
  type ArgumentValidation,
  type ArgumentValidator,
} from './schema.js';
import { uncallableWarning, type CallableBounds } from './callable-bounds.js';
import { failureResult } from './tool-results.js';
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

// Why re-exported: listeners and tool results moved to registry-events.ts and tool-results.ts,
// but importers still take them from here.
export type { ChangeListener, HandlerErrorListener, ResourceUpdateListener };
export { RAISED, errorResult, failureResult, markRaised, wasRaised } from './tool-results.js';

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
  private readonly events = new RegistryEvents();
  private readonly prompts = new PromptShelf(this.events);
  private readonly resources = new ResourceShelf(this.events);
  /** Bumped on every change of a kind; views cache against it. */
  readonly versions: Record<EntryKind, number> = this.events.versions;
  private toolListCache: { version: number; list: { owner: string; info: ToolInfo }[] } | undefined;

  /** What the front door lets a call name: a definition past it is told (callable-bounds.ts). */
  private readonly callable: CallableBounds | undefined;

  constructor(opts: { hubId?: string; callable?: CallableBounds } = {}) {
    this.hubId = opts.hubId ?? 'moonhub';
    this.callable = opts.callable;
  }

  /** Tells the warning listeners of a definition no call can reach (it still registers). */
  private checkCallable(owner: string, kind: 'tool' | 'prompt' | 'resource', name: string): void {
    const warning = uncallableWarning(kind, name, this.callable);
    if (warning !== undefined) this.events.definitionWarning(owner, warning);
  }

  onChange(listener: ChangeListener): () => void {
    return this.events.onChange(listener);
  }

  /** Whether an entry of `kind` that `filter` shows changed after `versions[kind]` was `version`. */
  changedSince(kind: EntryKind, version: number, filter: OwnerFilter): boolean {
    return this.events.changedSince(kind, version, filter);
  }

  onHandlerError(listener: HandlerErrorListener): () => void {
    return this.events.onHandlerError(listener);
  }

  onDefinitionWarning(listener: DefinitionWarningListener): () => void {
    return this.events.onDefinitionWarning(listener);
  }

  onResourceUpdated(listener: ResourceUpdateListener): () => void {
    return this.events.onResourceUpdated(listener);
  }

  /** Tells subscribers that the content behind `uri` changed. */
  resourceUpdated(uri: string): void {
    this.events.resourceUpdated(uri);
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
      handler = this.resources.get(ref.uri, filter)?.complete;
    }
    if (!handler) return { values: [], total: 0, hasMore: false };
    const owner =
      ref.type === 'ref/prompt'
        ? (this.prompts.get(ref.name!)?.owner ?? '')
        : (this.resources.get(ref.uri!)?.owner ?? '');
    const complete = handler;
    return this.events.guarded(owner, 'completion', ref.name ?? ref.uri ?? '', ctx, () =>
      complete(argument, value, context, ctx),
    );
  }

  // ---- batches -------------------------------------------------------------------------------

  beginBatch(): void {
    this.events.beginBatch();
  }

  endBatch(): void {
    this.events.endBatch();
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

  // ---- tools ---------------------------------------------------------------------------------

  /**
   * `opts.validation`: where the tool's arguments are checked and when the hub compiles its
   * schema (schema.ts, toolValidator): now, at the first call (upstreams), or never (a plugin
   * worker's tool, which the worker checks).
   */
  addTool(owner: string, spec: ToolSpec, opts?: { validation?: ArgumentValidation }): void {
    if (!spec.name) throw new RegistryError('invalid_definition', 'a tool needs a non-empty name');
    this.checkCallable(owner, 'tool', spec.name);
    const what = `tool '${spec.name}'`;
    const validate = toolValidator(spec.inputSchema, what, opts?.validation);
    if (validate.unenforced)
      this.events.definitionWarning(
        owner,
        `${what}: input_schema pattern(s) ${validate.unenforced.map((p) => `/${p}/`).join(', ')} ` +
          'cannot be matched in linear time (lookaround, backreference or u-flag syntax) and are not enforced by the hub',
      );
    if (validate.tooLarge)
      this.events.definitionWarning(
        owner,
        `${what}: input_schema has more than ${MAX_COMPILED_SCHEMA_MEMBERS} members and is not enforced by the hub (the tool checks its own input)`,
      );
    const info: ToolInfo = {
      name: spec.name,
      description: spec.description,
      inputSchema: spec.inputSchema,
    };
    if (spec.title !== undefined) info.title = spec.title;
    if (spec.outputSchema !== undefined) info.outputSchema = spec.outputSchema;
    if (spec.annotations !== undefined) info.annotations = spec.annotations;
    if (spec.icons !== undefined) info.icons = spec.icons;
    const was = this.tools.get(spec.name)?.entry.owner;
    this.tookOver('tool', spec.name, was, owner);
    this.tools.set(spec.name, { entry: { ...spec, owner }, info, validate });
    this.events.changed('tools', owner, was);
  }

  /** Removes a tool; with `owner`, only when that owner holds it. Returns whether it existed. */
  removeTool(name: string, owner?: string): boolean {
    const slot = this.tools.get(name);
    if (!slot || (owner !== undefined && slot.entry.owner !== owner)) return false;
    this.tools.delete(name);
    this.events.changed('tools', slot.entry.owner);
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

  /** The result refusing `args` when `tool`'s input schema does not take them, else undefined. */
  refusedArguments(tool: ResolvedTool, args: Record<string, unknown>): ToolResult | undefined {
    const slot = tool as ToolSlot;
    const problem = slot.validate(args);
    return problem === undefined
      ? undefined
      : failureResult(`Invalid arguments for tool '${slot.info.name}': ${problem}`);
  }

  /** Calls a tool `findTool` resolved (in the same view `filter`). */
  async callResolved(
    tool: ResolvedTool,
    args: Record<string, unknown> | undefined,
    ctx: CallContext,
    filter?: OwnerFilter,
  ): Promise<ToolResult> {
    const input = args ?? {};
    const refused = this.refusedArguments(tool, input);
    if (refused !== undefined) return refused;
    try {
      return await tool.entry.handler(input, withView(ctx, filter));
    } catch (err) {
      return failureResult(err instanceof Error ? err.message : String(err));
    }
  }

  // ---- prompts -------------------------------------------------------------------------------

  addPrompt(owner: string, spec: PromptSpec): void {
    if (!spec.name)
      throw new RegistryError('invalid_definition', 'a prompt needs a non-empty name');
    this.checkCallable(owner, 'prompt', spec.name);
    this.tookOver('prompt', spec.name, this.prompts.set({ ...spec, owner }), owner);
  }

  /** The last registration wins (LUA_API §2): one taking another plugin's name is told. */
  private tookOver(kind: string, name: string, was: string | undefined, now: string): void {
    if (was !== undefined && was !== now)
      this.events.definitionWarning(
        now,
        `${kind} '${name}' replaces the one registered by '${was}' (the last registration wins)`,
      );
  }

  removePrompt(name: string, owner?: string): boolean {
    return this.prompts.remove(name, owner);
  }

  getPromptEntry(name: string, filter?: OwnerFilter): PromptEntry | undefined {
    return this.prompts.get(name, filter);
  }

  listPrompts(filter?: OwnerFilter): PromptInfo[] {
    return this.prompts.list(filter);
  }

  countPrompts(filter?: OwnerFilter): number {
    return this.prompts.count(filter);
  }

  /** Renders a prompt; missing required arguments throw `invalid_arguments`. */
  async getPrompt(
    name: string,
    args: Record<string, string> | undefined,
    ctx: CallContext,
    filter?: OwnerFilter,
  ): Promise<PromptResult> {
    return this.prompts.render(name, args, ctx, filter);
  }

  // ---- resources -----------------------------------------------------------------------------

  addResource(owner: string, spec: ResourceSpec): void {
    this.resources.add(owner, spec);
    this.checkCallable(owner, 'resource', spec.uriTemplate);
  }

  removeResource(uriTemplate: string, owner?: string): boolean {
    return this.resources.remove(uriTemplate, owner);
  }

  listResources(filter?: OwnerFilter): ResourceInfo[] {
    return this.resources.listFixed(filter);
  }

  listResourceTemplates(filter?: OwnerFilter): ResourceTemplateInfo[] {
    return this.resources.listTemplates(filter);
  }

  countResources(filter?: OwnerFilter): number {
    return this.resources.count(filter);
  }

  /** Finds the entry serving `uri`: a fixed URI first, then the first template that matches. */
  resolveResource(
    uri: string,
    filter?: OwnerFilter,
  ): { entry: ResourceEntry; params: Record<string, string> } | undefined {
    return this.resources.resolve(uri, filter);
  }

  async readResource(
    uri: string,
    ctx: CallContext,
    filter?: OwnerFilter,
  ): Promise<ResourceReadResult> {
    return this.resources.read(uri, ctx, filter);
  }

  // ---- owners --------------------------------------------------------------------------------

  /** Removes everything `owner` registered; `undefined` clears the registry. */
  reset(owner?: string): void {
    this.beginBatch();
    try {
      for (const [name, slot] of this.tools) {
        if (owner === undefined || slot.entry.owner === owner) {
          this.tools.delete(name);
          this.events.changed('tools', slot.entry.owner);
        }
      }
      this.prompts.removeOwner(owner);
      this.resources.removeOwner(owner);
    } finally {
      this.endBatch();
    }
  }

  snapshotOwner(owner: string): OwnerSnapshot {
    return {
      tools: [...this.tools.values()].filter((s) => s.entry.owner === owner),
      prompts: this.prompts.ofOwner(owner),
      resources: this.resources.ofOwner(owner),
    };
  }

  /** Puts an owner's surface back as it was when `snapshot` was taken. */
  restoreOwner(owner: string, snapshot: OwnerSnapshot): void {
    this.beginBatch();
    try {
      this.reset(owner);
      for (const slot of snapshot.tools) {
        this.tools.set(slot.entry.name, slot);
        this.events.changed('tools', slot.entry.owner);
      }
      this.prompts.restore(snapshot.prompts);
      this.resources.restore(snapshot.resources);
    } finally {
      this.endBatch();
    }
  }

  owners(): Set<string> {
    const out = new Set<string>();
    for (const s of this.tools.values()) out.add(s.entry.owner);
    this.prompts.addOwnersTo(out);
    this.resources.addOwnersTo(out);
    return out;
  }
}
