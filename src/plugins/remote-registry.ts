/**
 * The registry a plugin's worker thread hands to the unchanged Lua API (lua-api/): a real
 * Registry holding this plugin's own entries (so definitions are checked here, with the same
 * errors, and handlers found by name), whose changes are mirrored to the hub's registry, and whose
 * questions about the whole hub (lists, counts, calls into other plugins) are asked of the hub's
 * thread: lists and counts synchronously, calls as messages.
 */
import type { MessagePort } from 'node:worker_threads';
import { Registry, markRaised } from '../registry/registry.js';
import { RegistryError } from '../registry/errors.js';
import type {
  CallContext,
  OwnerFilter,
  PromptResult,
  PromptSpec,
  ResourceInfo,
  ResourceReadResult,
  ResourceSpec,
  ResourceTemplateInfo,
  PromptInfo,
  ResourceEntry,
  ToolInfo,
  ToolResult,
  ToolSpec,
} from '../registry/types.js';
import type {
  AsyncOp,
  FromWorker,
  Origin,
  PlainContext,
  SyncOp,
  SyncRequest,
} from './worker-protocol.js';
import { ANSWER, waitForAnswer } from './sync-flag.js';

/** A view on the hub's side, named by the call it belongs to or the session it is of. */
export type RemoteView = ((owner: string) => boolean) & { origin: Origin };

export function remoteView(origin: Origin): RemoteView {
  // The worker never filters by it: every question that needs the view goes to the hub.
  return Object.assign(() => true, { origin });
}

export function originOf(filter: OwnerFilter | undefined, ctx?: CallContext): Origin {
  const f = (filter ?? ctx?.filter) as Partial<RemoteView> | undefined;
  return f?.origin ?? {};
}

/** The fields of `ctx` that are the same for all of one caller's calls (who is calling). */
export function callerPart(ctx: CallContext): PlainContext {
  const out: PlainContext = { hub_id: ctx.hub_id };
  if (ctx.session_uuid !== undefined) out.session_uuid = ctx.session_uuid;
  if (ctx.agent_name !== undefined) out.agent_name = ctx.agent_name;
  if (ctx.target !== undefined) out.target = ctx.target;
  if (ctx.principal !== undefined) out.principal = ctx.principal;
  if (ctx.plugin !== undefined) out.plugin = ctx.plugin;
  return out;
}

export function plainContext(ctx: CallContext): PlainContext {
  const out = callerPart(ctx);
  if (ctx.request_id !== undefined) out.request_id = ctx.request_id;
  if (ctx.uri !== undefined) out.uri = ctx.uri;
  if (ctx.fields !== undefined) out.fields = { ...ctx.fields };
  return out;
}

export interface HubLink {
  post(msg: FromWorker): void;
  /** Asks the hub's thread and waits for its answer (a reply port plus a shared flag). */
  ask(req: Omit<SyncRequest, 'after' | 'seq'>): unknown;
  /** Sends an asynchronous request; resolves or rejects with the hub's answer. */
  request(op: AsyncOp, args: unknown[], origin: Origin, ctx?: PlainContext): Promise<unknown>;
}

/** `posted` counts the messages the worker has posted on its own port (SyncRequest.after). */
export function syncLink(
  port: MessagePort,
  flag: Int32Array,
  posted: () => number,
): HubLink['ask'] {
  let seq = 0;
  return (req) => {
    const question = { ...req, seq: ++seq, after: 0 } satisfies SyncRequest;
    Atomics.store(flag, ANSWER, 0);
    question.after = posted();
    port.postMessage(question);
    const reply = waitForAnswer(port, flag, question.seq, req.op);
    if (!reply.ok) throw new Error(reply.error ?? `'${req.op}' failed`);
    return reply.value;
  };
}

/** Specs as data: the handler and completer stay here, the hub learns whether there is one. */
function specData(spec: object): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(spec)) {
    if (k === 'handler') continue;
    if (k === 'complete') out.hasComplete = v !== undefined;
    else if (v !== undefined) out[k] = v;
  }
  return out;
}

export class RemoteRegistry extends Registry {
  /** Resource handlers by URI or template: the hub's thread has already resolved the URI. */
  private readonly own = new Map<string, ResourceEntry>();

  constructor(
    hubId: string,
    private readonly link: HubLink,
  ) {
    super({ hubId });
  }

  private ask(op: SyncOp, filter: OwnerFilter, args: unknown[] = []): unknown {
    return this.link.ask({ op, origin: originOf(filter), args });
  }

  // ---- changes: made here (checked, kept for dispatch), then mirrored -----------------------

  override addTool(owner: string, spec: ToolSpec): void {
    super.addTool(owner, spec);
    this.link.post({ type: 'register', kind: 'tool', owner, spec: specData(spec) });
  }

  override addPrompt(owner: string, spec: PromptSpec): void {
    super.addPrompt(owner, spec);
    this.link.post({ type: 'register', kind: 'prompt', owner, spec: specData(spec) });
  }

  resourceEntry(uriTemplate: string): ResourceEntry | undefined {
    return this.own.get(uriTemplate);
  }

  override addResource(owner: string, spec: ResourceSpec): void {
    super.addResource(owner, spec);
    this.own.set(spec.uriTemplate, { ...spec, owner, isTemplate: false });
    this.link.post({ type: 'register', kind: 'resource', owner, spec: specData(spec) });
  }

  override removeTool(name: string, owner?: string): boolean {
    const here = super.removeTool(name, owner);
    this.link.post({ type: 'remove', kind: 'tool', name, owner });
    return here;
  }

  override removePrompt(name: string, owner?: string): boolean {
    const here = super.removePrompt(name, owner);
    this.link.post({ type: 'remove', kind: 'prompt', name, owner });
    return here;
  }

  override removeResource(uriTemplate: string, owner?: string): boolean {
    const here = super.removeResource(uriTemplate, owner);
    if (here) this.own.delete(uriTemplate);
    this.link.post({ type: 'remove', kind: 'resource', name: uriTemplate, owner });
    return here;
  }

  override reset(owner?: string): void {
    super.reset(owner);
    for (const [key, entry] of this.own) {
      if (owner === undefined || entry.owner === owner) this.own.delete(key);
    }
    this.link.post({ type: 'reset', owner });
  }

  override beginBatch(): void {
    super.beginBatch();
    this.link.post({ type: 'batch', open: true });
  }

  override endBatch(): void {
    super.endBatch();
    this.link.post({ type: 'batch', open: false });
  }

  override resourceUpdated(uri: string): void {
    this.link.post({ type: 'resource-updated', uri });
  }

  // ---- the whole hub: asked of the hub's thread --------------------------------------------

  override listTools(filter?: OwnerFilter): ToolInfo[] {
    return this.ask('listTools', filter) as ToolInfo[];
  }

  override countTools(filter?: OwnerFilter): number {
    return this.ask('countTools', filter) as number;
  }

  override listPrompts(filter?: OwnerFilter): PromptInfo[] {
    return this.ask('listPrompts', filter) as PromptInfo[];
  }

  override countPrompts(filter?: OwnerFilter): number {
    return this.ask('countPrompts', filter) as number;
  }

  override listResources(filter?: OwnerFilter): ResourceInfo[] {
    return this.ask('listResources', filter) as ResourceInfo[];
  }

  override listResourceTemplates(filter?: OwnerFilter): ResourceTemplateInfo[] {
    return this.ask('listResourceTemplates', filter) as ResourceTemplateInfo[];
  }

  override countResources(filter?: OwnerFilter): number {
    return this.ask('countResources', filter) as number;
  }

  override async callTool(
    name: string,
    args: Record<string, unknown> | undefined,
    ctx: CallContext,
    filter?: OwnerFilter,
  ): Promise<ToolResult> {
    const answer = (await this.remote('callTool', [name, args ?? {}], ctx, filter)) as {
      result: ToolResult;
      raised: boolean;
    };
    // mcp.call_tool answers a raised error with `nil, err`, a returned isError with its content.
    return answer.raised ? markRaised(answer.result) : answer.result;
  }

  override async getPrompt(
    name: string,
    args: Record<string, string> | undefined,
    ctx: CallContext,
    filter?: OwnerFilter,
  ): Promise<PromptResult> {
    return (await this.remote('getPrompt', [name, args ?? {}], ctx, filter)) as PromptResult;
  }

  override async readResource(
    uri: string,
    ctx: CallContext,
    filter?: OwnerFilter,
  ): Promise<ResourceReadResult> {
    return (await this.remote('readResource', [uri], ctx, filter)) as ResourceReadResult;
  }

  private async remote(
    op: AsyncOp,
    args: unknown[],
    ctx: CallContext,
    filter: OwnerFilter,
  ): Promise<unknown> {
    try {
      return await this.link.request(op, args, originOf(filter, ctx), plainContext(ctx));
    } catch (err) {
      // The hub's registry errors keep their code (unknown tool, invalid arguments...).
      const e = err as Error & { code?: string };
      if (e.code) throw new RegistryError(e.code as never, e.message);
      throw err;
    }
  }
}
