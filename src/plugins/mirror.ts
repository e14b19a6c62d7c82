/**
 * A plugin worker's registration, mirrored into the hub's registry: the same definition, with a
 * handler (and completer) that runs the call in the worker under the entry's own time limit.
 */
import type { Registry } from '../registry/registry.js';
import type {
  CompleteHandler,
  PromptResult,
  PromptSpec,
  ResourceReadResult,
  ResourceSpec,
  ToolResult,
  ToolSpec,
} from '../registry/types.js';
import type { IsolatedPlugin } from './isolated-plugin.js';
import type { EntryKindName } from './worker-protocol.js';

const mirrored = new WeakSet<object>();

/** Whether a registry entry's handler is a plugin worker's (not, say, a proxy's on this thread). */
export function isMirrored(handler: object): boolean {
  return mirrored.has(handler);
}

function mark<T extends object>(handler: T): T {
  mirrored.add(handler);
  return handler;
}

export function mirrorEntry(
  registry: Registry,
  plugin: IsolatedPlugin,
  kind: EntryKindName,
  owner: string,
  data: Record<string, unknown>,
): void {
  const { hasComplete, ...spec } = data;
  const timeoutMs = typeof spec.timeoutMs === 'number' ? spec.timeoutMs : undefined;
  if (kind === 'tool') {
    const name = String(spec.name);
    registry.addTool(owner, {
      ...(spec as unknown as ToolSpec),
      handler: mark(
        (args, ctx) => plugin.invoke('tool', name, args, ctx, timeoutMs) as Promise<ToolResult>,
      ),
    });
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
