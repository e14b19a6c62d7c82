/**
 * What a Lua state's `mcp.call`, `tools.use`, `mcp.listTools` and `notice` talk to: the tools one
 * caller may use. A plugin or `moonhub run` script reaches the registry directly; an `execute`
 * script reaches it through its worker's message port (src/execute/).
 */
import type { Registry } from '../registry/registry.js';
import type { CallContext, OwnerFilter, ToolResult } from '../registry/types.js';

export interface ToolCaller {
  /**
   * Calls a tool on the caller's behalf. A tool the caller may not see is refused exactly like
   * an unknown one (a rejected promise whose message is `Unknown tool: NAME`).
   */
  call(name: string, args: Record<string, unknown>): Promise<ToolResult>;
  /** Names of the tools the caller may see, sorted. */
  listTools(): string[];
  /** A progress/log message to the caller; dropped (or logged) when there is no caller to tell. */
  notice(text: string, params: unknown): void;
  /**
   * The context every call carries (the caller, the view, the cancellation): for a caller that
   * also reaches tools another way on the hub's authority (execute's direct calls).
   */
  readonly context?: CallContext;
}

/** Owners whose tools a script must not reach even when the caller sees them. */
export type OwnerGuard = (owner: string) => boolean;

export interface RegistryCallerOptions {
  registry: Registry;
  /** The context each inner call carries (who is calling); `filter` is the caller's view. */
  ctx: CallContext;
  /** Tools of these owners are hidden from the script (execute hides itself). */
  hide?: OwnerGuard;
  /** Cancels inner calls when the script ends. */
  signal?: AbortSignal;
  notice?: (text: string, params: unknown) => void;
}

/** A caller over the registry, seeing exactly what `ctx.filter` lets it see. */
export function registryCaller(opts: RegistryCallerOptions): ToolCaller {
  const { registry, ctx, hide, signal } = opts;
  const view = hidingView(ctx.filter, hide);
  const inner: CallContext = { ...ctx, filter: view };
  if (signal !== undefined) inner.signal = signal;
  return {
    call: (name, args) => registry.callTool(name, args, inner, view),
    listTools: () => registry.listTools(view).map((t) => t.name),
    notice: (text, params) => opts.notice?.(text, params),
    context: inner,
  };
}

/**
 * The caller's view less the hidden owners. Made in a function of its own: a closure shares its
 * scope's context with every other closure made there, and this one outlives the run (finished
 * calls keep their view, hub-answers.ts `endedContext`); made in `registryCaller` it kept the
 * run's whole request alive through ~1,000 later runs (docs/performance.md, "Session 10").
 */
function hidingView(outer: OwnerFilter, hide: OwnerGuard | undefined): OwnerFilter {
  if (hide === undefined) return outer;
  return (owner) => !hide(owner) && (outer === undefined || outer(owner));
}
