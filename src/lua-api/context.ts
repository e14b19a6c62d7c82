/**
 * The context table a Lua handler receives as its second argument (LUA_API §2.1): who is
 * calling, plus (as the protocol features land) functions that talk back to the caller.
 */
import type { CallContext } from '../registry/types.js';

export function luaContext(ctx: CallContext): Record<string, unknown> {
  const out: Record<string, unknown> = { hub_id: ctx.hub_id };
  if (ctx.session_uuid !== undefined) out.session_uuid = ctx.session_uuid;
  if (ctx.agent_name !== undefined) out.agent_name = ctx.agent_name;
  if (ctx.target !== undefined) out.target = ctx.target;
  if (ctx.principal !== undefined) out.principal = ctx.principal;
  if (ctx.plugin !== undefined) out.plugin = ctx.plugin;
  if (ctx.request_id !== undefined) out.request_id = ctx.request_id;
  if (ctx.uri !== undefined) out.uri = ctx.uri;
  return out;
}
