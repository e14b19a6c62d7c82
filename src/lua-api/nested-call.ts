/**
 * Calls made from Lua inside a running handler (`mcp.call`, `tools.use`, `mcp.call_tool`,
 * `mcp.read_resource`, `mcp.get_prompt`, in the handler or a task it spawned) act for that
 * handler's caller: the nested tool gets the caller's MCP client (progress, log, elicit), the
 * caller's cancellation and the caller's view. Who is asking is taken from the live call, never
 * from a table the Lua code passes, so plugin code running for one session cannot widen that
 * session's view by naming another session or principal.
 */
import type { LuaState } from '../lua/state.js';
import { extractImages } from '../registry/result-images.js';
import type { CallContext } from '../registry/types.js';

/** The context of the handler call whose code runs in `state` right now, if any. */
export function activeHandlerContext(state: LuaState): CallContext | undefined {
  // Only handler calls (their limits carry the context as tag) and tasks they spawn have one.
  return state.activeTag as CallContext | undefined;
}

/** The context of a call made from inside `outer`'s handler, by plugin `plugin`. */
export function nestedContext(outer: CallContext, plugin: string): CallContext {
  const ctx: CallContext = { hub_id: outer.hub_id, plugin };
  if (outer.session_uuid !== undefined) ctx.session_uuid = outer.session_uuid;
  if (outer.agent_name !== undefined) ctx.agent_name = outer.agent_name;
  if (outer.target !== undefined) ctx.target = outer.target;
  if (outer.principal !== undefined) ctx.principal = outer.principal;
  if (outer.request_id !== undefined) ctx.request_id = outer.request_id;
  if (outer.peer !== undefined) ctx.peer = outer.peer;
  if (outer.filter !== undefined) ctx.filter = outer.filter;
  const signal = outer.signal;
  if (signal !== undefined) ctx.signal = signal;
  return ctx;
}

/** A `notice` as log data for the client: `{text, params, images}`, as `execute` sends it. */
export function noticeData(text: string, params: unknown): Record<string, unknown> {
  try {
    const pictures = extractImages(params ?? null);
    return { text, params: pictures.value ?? null, images: pictures.images };
  } catch (err) {
    return { text, error: (err as Error).message };
  }
}
