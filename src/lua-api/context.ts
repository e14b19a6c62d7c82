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
import type { MessageGate } from './plugin-limits.js';
import { WithMetatable } from '../lua/bridge.js';
import { LuaArgumentError } from '../lua/errors.js';
import type { CallLimits, LuaState } from '../lua/state.js';
import { LuaMulti } from '../lua/state.js';
import { LOG_LEVELS, type CallContext, type CallPeer, type LogLevel } from '../registry/types.js';

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

interface LiveCall {
  ctx: CallContext;
  /** The last progress value sent, so a step backwards is refused. */
  progress: number | undefined;
  /** Per-kind counters for default input keys (`elicit_1`, `sample_1`, ...). */
  seq: Record<string, number> | undefined;
}

interface ContextState {
  metatableRef: number;
  calls: Map<number, LiveCall>;
}

const states = new WeakMap<LuaState, ContextState>();
let nextCallId = 1;

/** Methods a handler may send to the client, by the Lua function that sends them. */
const INPUT_METHODS: Readonly<Record<string, string>> = {
  'elicitation/create': 'elicit',
  'sampling/createMessage': 'sample',
  'roots/list': 'list_roots',
};

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
  const calls = new Map<number, LiveCall>();
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

  const peerOf = (c: LiveCall, fname: string): CallPeer => {
    const peer = c.ctx.peer;
    if (peer === undefined) {
      throw new LuaArgumentError(
        `context.${fname}: this call has no MCP client to answer it (it was not made by a client)`,
      );
    }
    return peer;
  };

  const keyFor = (c: LiveCall, kind: string, given: unknown, fname: string): string => {
    if (given !== undefined) {
      if (typeof given !== 'string' || given === '') {
        throw new LuaArgumentError(
          `bad argument #1 to '${fname}' (key must be a non-empty string)`,
        );
      }
      return given;
    }
    c.seq ??= {};
    const n = (c.seq[kind] ?? 0) + 1;
    c.seq[kind] = n;
    return `${kind}_${n}`;
  };

  const ask = async (
    c: LiveCall,
    fname: string,
    method: string,
    params: Record<string, unknown>,
    key: string,
  ): Promise<unknown> => {
    try {
      return await peerOf(c, fname).request(method, params, { key });
    } catch (err) {
      throw new LuaArgumentError(`context.${fname}: ${(err as Error).message ?? String(err)}`);
    }
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
    progress: {
      fn: (args) => {
        const c = live(args[0], 'progress');
        const [, done, total, message] = args;
        if (typeof done !== 'number' || !Number.isFinite(done)) {
          throw new LuaArgumentError(
            `bad argument #1 to 'progress' (number expected, got ${typeName(done)})`,
          );
        }
        if (total !== undefined && (typeof total !== 'number' || !Number.isFinite(total))) {
          throw new LuaArgumentError(
            `bad argument #2 to 'progress' (number or nil expected, got ${typeName(total)})`,
          );
        }
        if (message !== undefined && typeof message !== 'string') {
          throw new LuaArgumentError(
            `bad argument #3 to 'progress' (string or nil expected, got ${typeName(message)})`,
          );
        }
        if (c.progress !== undefined && done < c.progress) {
          throw new LuaArgumentError(
            `context.progress: progress must not go backwards (${done} after ${c.progress})`,
          );
        }
        c.progress = done;
        if (c.ctx.peer === undefined) return false;
        const text = gate === undefined ? message : gate.admit(message ?? '');
        if (text === undefined) return false;
        return c.ctx.peer.progress(done, total, message === undefined ? undefined : text);
      },
    },
    log: {
      fn: (args) => {
        const c = live(args[0], 'log');
        const [, level, data, logger] = args;
        if (typeof level !== 'string' || !LOG_LEVELS.has(level)) {
          throw new LuaArgumentError(
            `bad argument #1 to 'log' (a log level expected: debug, info, notice, warning, error, critical, alert or emergency; got ${typeof level === 'string' ? `'${level}'` : typeName(level)})`,
          );
        }
        if (data === undefined) {
          throw new LuaArgumentError("bad argument #2 to 'log' (value expected)");
        }
        if (logger !== undefined && typeof logger !== 'string') {
          throw new LuaArgumentError(
            `bad argument #3 to 'log' (string or nil expected, got ${typeName(logger)})`,
          );
        }
        if (c.ctx.peer === undefined) return undefined;
        const admitted = gate === undefined ? data : gate.admitValue(data);
        if (admitted !== undefined) c.ctx.peer.log(level as LogLevel, admitted, logger);
        return undefined;
      },
    },
    poll_later: {
      fn: (args) => {
        const c = live(args[0], 'poll_later');
        const ms = args[1] ?? 1000;
        if (typeof ms !== 'number' || !Number.isFinite(ms) || ms < 0) {
          throw new LuaArgumentError(
            `bad argument #1 to 'poll_later' (milliseconds >= 0 or nil expected, got ${typeName(ms)})`,
          );
        }
        return c.ctx.peer?.pollLater?.(Math.round(ms)) ?? false;
      },
    },
    elicit: {
      async: true,
      fn: (args) => {
        const c = live(args[0], 'elicit');
        const spec = specTable(args[1], 'elicit');
        if (typeof spec.message !== 'string') {
          throw new LuaArgumentError("bad argument #1 to 'elicit' (message must be a string)");
        }
        const params = paramsOf(spec, ELICIT_ALIASES);
        const schema = params.requestedSchema;
        if (schema === undefined) params.requestedSchema = { type: 'object', properties: {} };
        else if (!isObject(schema)) {
          throw new LuaArgumentError(
            "bad argument #1 to 'elicit' (requested_schema must be a table)",
          );
        } else params.requestedSchema = fixSchemaArrays(schema);
        const key = keyFor(c, 'elicit', spec.key, 'elicit');
        return ask(c, 'elicit', 'elicitation/create', params, key);
      },
    },
    sample: {
      async: true,
      fn: (args) => {
        const c = live(args[0], 'sample');
        const spec = specTable(args[1], 'sample');
        const params = paramsOf(spec, SAMPLE_ALIASES);
        if (typeof spec.prompt === 'string') {
          delete params.prompt;
          params.messages ??= [{ role: 'user', content: { type: 'text', text: spec.prompt } }];
        }
        if (!Array.isArray(params.messages) || params.messages.length === 0) {
          throw new LuaArgumentError(
            "bad argument #1 to 'sample' (a prompt string or a non-empty messages array expected)",
          );
        }
        params.maxTokens ??= 1000;
        const key = keyFor(c, 'sample', spec.key, 'sample');
        return ask(c, 'sample', 'sampling/createMessage', params, key);
      },
    },
    list_roots: {
      async: true,
      fn: (args) => {
        const c = live(args[0], 'list_roots');
        const spec = args[1] === undefined ? {} : specTable(args[1], 'list_roots');
        const key = keyFor(c, 'roots', spec.key, 'list_roots');
        return ask(c, 'list_roots', 'roots/list', {}, key);
      },
    },
    input: {
      async: true,
      fn: async (args) => {
        const c = live(args[0], 'input');
        const requests = specTable(args[1], 'input');
        const keys = Object.keys(requests);
        if (keys.length === 0) {
          throw new LuaArgumentError("bad argument #1 to 'input' (at least one request expected)");
        }
        const asks = keys.map((key) => {
          const r = requests[key];
          const method = isObject(r) ? r.method : undefined;
          if (typeof method !== 'string' || !Object.hasOwn(INPUT_METHODS, method)) {
            throw new LuaArgumentError(
              `bad argument #1 to 'input' (${key}.method must be elicitation/create, sampling/createMessage or roots/list)`,
            );
          }
          const params = isObject((r as Record<string, unknown>).params)
            ? ((r as Record<string, unknown>).params as Record<string, unknown>)
            : {};
          return ask(c, 'input', method, params, key);
        });
        const answers = await Promise.all(asks);
        const out: Record<string, unknown> = {};
        keys.forEach((key, i) => (out[key] = answers[i]));
        return new LuaMulti([out]);
      },
    },
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

const ELICIT_ALIASES: Record<string, string> = { requested_schema: 'requestedSchema' };
const SAMPLE_ALIASES: Record<string, string> = {
  max_tokens: 'maxTokens',
  system_prompt: 'systemPrompt',
  model_preferences: 'modelPreferences',
  stop_sequences: 'stopSequences',
  include_context: 'includeContext',
};

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Uint8Array);
}

function typeName(v: unknown): string {
  if (v === undefined) return 'nil';
  if (v === null) return 'userdata';
  if (v instanceof Uint8Array) return 'string';
  if (typeof v === 'object') return 'table';
  return typeof v;
}

function specTable(v: unknown, fname: string): Record<string, unknown> {
  if (isObject(v)) return v;
  // An empty Lua table reads as an empty array.
  if (Array.isArray(v) && v.length === 0) return {};
  throw new LuaArgumentError(`bad argument #1 to '${fname}' (table expected, got ${typeName(v)})`);
}

/** The MCP params of a spec table: the `key` dropped, snake_case aliases renamed. */
function paramsOf(
  spec: Record<string, unknown>,
  aliases: Record<string, string>,
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(spec)) {
    if (k === 'key') continue;
    out[Object.hasOwn(aliases, k) ? aliases[k]! : k] = v;
  }
  return out;
}

/** `required = {}` in a Lua schema means an empty array, not an empty object. */
function fixSchemaArrays(schema: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...schema };
  if (isObject(out.required) && Object.keys(out.required).length === 0) out.required = [];
  return out;
}
