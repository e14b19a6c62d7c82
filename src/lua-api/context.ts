/**
 * The context table a Lua handler receives as its second argument (LUA_API §2.1): who is
 * calling (plain data), plus functions that talk back to the caller while the call runs:
 * `context.progress`, `context.log`, `context.elicit`, `context.sample`, `context.list_roots`,
 * `context.input`, `context.poll_later`, and the lazily read `context.client_capabilities`.
 *
 * The functions are not copied into every table: one shared metatable per state answers their
 * lookup with a closure bound to the table's `call_id`, which names the live call on the JS
 * side. A call that makes no use of them pays for one map entry and nothing else.
 */
import { IdTable } from '../id-table.js';
import type { MessageGate } from './plugin-limits.js';
import { WithMetatable } from '../lua/bridge.js';
import { LuaArgumentError } from '../lua/errors.js';
import type { CallLimits, LuaState } from '../lua/state.js';
import type { CallContext } from '../registry/types.js';
import type { LiveCall } from './context-calls.js';
import { noticeFunctions } from './context-notices.js';
import { requestFunctions } from './context-requests.js';

/** Who is calling, as plain data (also what `mcp.call_tool` callers see). */
export function luaContext(ctx: CallContext): Record<string, unknown> {
  // Fields a Lua caller passed come first, so the hub's identity fields always win.
  const out: Record<string, unknown> =
    ctx.fields === undefined ? { hub_id: ctx.hub_id } : { ...ctx.fields, hub_id: ctx.hub_id };
  if (ctx.session_uuid !== undefined) out.session_uuid = ctx.session_uuid;
  if (ctx.agent_name !== undefined) out.agent_name = ctx.agent_name;
  if (ctx.target !== undefined) out.target = ctx.target;
  if (ctx.principal !== undefined) out.principal = ctx.principal;
  if (ctx.plugin !== undefined) out.plugin = ctx.plugin;
  if (ctx.request_id !== undefined) out.request_id = ctx.request_id;
  if (ctx.uri !== undefined) out.uri = ctx.uri;
  return out;
}

interface ContextState {
  metatableRef: number;
  /** Not a Map: entries live a call each and hold its context (id-table.ts). */
  calls: IdTable<LiveCall, number>;
}

const states = new WeakMap<LuaState, ContextState>();
let nextCallId = 1;

// The Lua half: the shared metatable. Waiting functions already raise at their caller's line;
// the others are called through pcall so their errors are raised again at the caller's line.
const CONTEXT_LUA = String.raw`
local lib = _moonhub_context
_moonhub_context = nil
local rawget, pcall, error, pack, unpack = rawget, pcall, error, table.pack, table.unpack
local caps = lib.caps
local waiting = { elicit = lib.elicit, sample = lib.sample, list_roots = lib.list_roots, input = lib.input }
local immediate = { progress = lib.progress, log = lib.log, poll_later = lib.poll_later }
lib.register({
  __index = function(t, k)
    local id = rawget(t, "call_id")
    if k == "client_capabilities" then return caps(id) end
    local f = waiting[k]
    if f ~= nil then return function(...) return f(id, ...) end end
    f = immediate[k]
    if f == nil then return nil end
    return function(...)
      local r = pack(pcall(f, id, ...))
      if r[1] then return unpack(r, 2, r.n) end
      error(r[2], 2)
    end
  end,
})
`;

/** `gate` (absent: unbounded) cuts long progress/log messages and drops those past the rate. */
export function installContext(state: LuaState, gate?: MessageGate): void {
  const calls = new IdTable<LiveCall, number>();
  // The context's functions live in context-notices.ts (sent at once) and context-requests.ts
  // (wait for the client's answer); both find the live call through `live`.
  let metatableRef = 0;

  const live = (id: unknown, fname: string): LiveCall => {
    const c = typeof id === 'number' ? calls.get(id) : undefined;
    if (c === undefined) {
      throw new LuaArgumentError(
        `context.${fname}: the call this context belongs to has already ended`,
      );
    }
    return c;
  };

  state.defineLibrary('_moonhub_context', {
    register: {
      fn: (_args, call) => {
        metatableRef = call.ref(1);
        return undefined;
      },
    },
    caps: {
      fn: (args) => live(args[0], 'client_capabilities').ctx.peer?.clientCapabilities ?? {},
    },
    ...noticeFunctions(live, gate),
    ...requestFunctions(live),
  });
  state.exec(CONTEXT_LUA, '=[moonhub context]');
  states.set(state, { metatableRef, calls });
}

/**
 * Runs a registered Lua handler with `args` followed by the context table (appended to `args`),
 * the context carrying the call's functions. States without the context API get plain data.
 */
export async function callWithContext(
  state: LuaState,
  ref: number,
  args: unknown[],
  ctx: CallContext,
  limits: CallLimits,
): Promise<unknown[]> {
  const cs = states.get(state);
  if (cs === undefined) {
    args.push(luaContext(ctx));
    return state.call(ref, args, limits);
  }
  const id = nextCallId++;
  const table = luaContext(ctx);
  table.call_id = id;
  args.push(new WithMetatable(table, cs.metatableRef));
  cs.calls.set(id, { ctx, progress: undefined, seq: undefined });
  try {
    return await state.call(ref, args, limits);
  } finally {
    cs.calls.delete(id);
  }
}
