/**
 * A plugin worker's registration, mirrored into the hub's registry: the same definition, with a
 * handler (and completer) that runs the call in the worker under the entry's own time limit.
 */
import type { Registry } from '../registry/registry.js';
import type {
  CallContext,
  CompleteHandler,
  PromptResult,
  PromptSpec,
  ResourceReadResult,
  ResourceSpec,
  ToolResult,
  ToolSpec,
} from '../registry/types.js';
import type { DirectPlugin } from './direct-port.js';
import type { EntryKindName, FromWorker, ToWorker } from './worker-protocol.js';

type Invoke = Extract<ToWorker, { type: 'invoke' }>;

/** What a mirrored entry calls: the plugin's worker (an IsolatedPlugin). */
export interface PluginInvoker {
  invoke(
    kind: Invoke['kind'],
    name: string,
    input: unknown,
    ctx: CallContext,
    limitMs: number | undefined,
    complete?: Invoke['complete'],
  ): Promise<unknown>;
}

const mirrored = new WeakSet<object>();
/** Mirrored tools' plugins and limits, by handler: what execute may call directly. */
const targets = new WeakMap<object, DirectTarget>();

export interface DirectTarget {
  plugin: DirectPlugin;
  /** The tool's own time limit (undefined: the default). */
  timeoutMs: number | undefined;
}

/** The plugin worker behind a registry entry's handler, when execute may call it directly. */
export function directTarget(handler: object): DirectTarget | undefined {
  return targets.get(handler);
}

/** Whether a registry entry's handler is a plugin worker's (not, say, a proxy's on this thread). */
export function isMirrored(handler: object): boolean {
  return mirrored.has(handler);
}

function isDirectPlugin(p: PluginInvoker): p is PluginInvoker & DirectPlugin {
  return typeof (p as Partial<DirectPlugin>).openDirect === 'function';
}

function mark<T extends object>(handler: T): T {
  mirrored.add(handler);
  return handler;
}

export function mirrorEntry(
  registry: Registry,
  plugin: PluginInvoker,
  kind: EntryKindName,
  owner: string,
  data: Record<string, unknown>,
): void {
  const { hasComplete, ...spec } = data;
  const timeoutMs = typeof spec.timeoutMs === 'number' ? spec.timeoutMs : undefined;
  if (kind === 'tool') {
    const name = String(spec.name);
    const handler = mark(
      (args: Record<string, unknown>, ctx: CallContext) =>
        plugin.invoke('tool', name, args, ctx, timeoutMs) as Promise<ToolResult>,
    );
    if (isDirectPlugin(plugin)) targets.set(handler, { plugin, timeoutMs });
    // The worker compiled the schema at mcp.tool and checks each call's arguments (plugin-worker.ts).
    registry.addTool(
      owner,
      { ...(spec as unknown as ToolSpec), handler },
      { validation: 'worker' },
    );
    return;
  }
  const key = kind === 'prompt' ? String(spec.name) : String(spec.uriTemplate);
  const complete: CompleteHandler | undefined = hasComplete
    ? (argument, value, context, ctx) =>
        plugin.invoke(
          kind === 'prompt' ? 'complete-prompt' : 'complete-resource',
          key,
          undefined,
          ctx,
          timeoutMs,
          { argument, value, context },
        ) as ReturnType<CompleteHandler>
    : undefined;
  if (kind === 'prompt') {
    registry.addPrompt(owner, {
      ...(spec as unknown as PromptSpec),
      complete,
      handler: mark(
        (args, ctx) => plugin.invoke('prompt', key, args, ctx, timeoutMs) as Promise<PromptResult>,
      ),
    });
    return;
  }
  registry.addResource(owner, {
    ...(spec as unknown as ResourceSpec),
    complete,
    handler: mark(
      (uri, params, ctx) =>
        plugin.invoke(
          'resource',
          key,
          { uri, params },
          ctx,
          timeoutMs,
        ) as Promise<ResourceReadResult>,
    ),
  });
}

type Change = Extract<
  FromWorker,
  { type: 'register' | 'remove' | 'reset' | 'batch' | 'resource-updated' }
>;

/**
 * A worker's registry changes, applied to the hub's registry: held while a generation loads, then
 * replacing the previous generation's entries in one batch (the proxies', kept on this thread,
 * stay); the batches the worker opened are closed if it dies.
 */
export class RegistryMirror {
  private held: Change[] | undefined = [];
  private openBatches = 0;
  /** A retired generation: its registry changes are dropped (the new one owns the entries). */
  private stopped = false;

  constructor(
    private readonly registry: Registry,
    private readonly owner: string,
    private readonly plugin: PluginInvoker,
  ) {}

  hold(): void {
    this.held = [];
  }

  drop(): void {
    this.held = undefined;
  }

  /** Closes the batches open, and drops the registrations, removals, resets and batches to come. */
  stop(): void {
    this.closeBatches();
    this.stopped = true;
  }

  receive(msg: Change): void {
    if (this.stopped && msg.type !== 'resource-updated') return;
    if (this.held) this.held.push(msg);
    else this.apply(msg);
  }

  applyHeld(): void {
    const held = this.held ?? [];
    this.held = undefined;
    const { registry, owner } = this;
    registry.beginBatch();
    try {
      // The previous generation's entries go; the proxies' (kept on this thread) stay.
      const before = registry.snapshotOwner(owner);
      for (const slot of before.tools)
        if (isMirrored(slot.entry.handler)) registry.removeTool(slot.entry.name, owner);
      for (const p of before.prompts)
        if (isMirrored(p.handler)) registry.removePrompt(p.name, owner);
      for (const r of before.resources)
        if (isMirrored(r.handler)) registry.removeResource(r.uriTemplate, owner);
      for (const msg of held) this.apply(msg);
    } finally {
      registry.endBatch();
    }
  }

  private apply(msg: Change): void {
    const { registry } = this;
    switch (msg.type) {
      case 'register':
        return mirrorEntry(registry, this.plugin, msg.kind, msg.owner, msg.spec);
      case 'remove':
        return void removeEntry(registry, msg.kind, msg.name, msg.owner);
      case 'reset':
        return registry.reset(msg.owner);
      case 'batch':
        if (msg.open) {
          this.openBatches++;
          registry.beginBatch();
        } else if (this.openBatches > 0) {
          this.openBatches--;
          registry.endBatch();
        }
        return;
      case 'resource-updated':
        return registry.resourceUpdated(msg.uri);
    }
  }

  closeBatches(): void {
    while (this.openBatches > 0) {
      this.openBatches--;
      this.registry.endBatch();
    }
  }
}

function removeEntry(
  registry: Registry,
  kind: EntryKindName,
  name: string,
  owner?: string,
): boolean {
  if (kind === 'tool') return registry.removeTool(name, owner);
  if (kind === 'prompt') return registry.removePrompt(name, owner);
  return registry.removeResource(name, owner);
}
