/**
 * `mcp.proxy(url, opts)` and `mcp.remove_proxy(url)` (LUA_API §2): the Lua face of
 * upstream/proxy. The options are checked here in Lua's wording; the Lua callbacks
 * (`transform_arguments`, `on_auth_error`) are kept as references into the plugin's state.
 */
import type { Logger } from '../log.js';
import { LuaArgumentError } from '../lua/errors.js';
import { LuaMulti, type HostCall, type LuaState } from '../lua/state.js';
import { LuaType } from '../lua/wasm.js';
import type { Registry } from '../registry/registry.js';
import type { CallContext } from '../registry/types.js';
import { upstreamsOf } from '../upstream/manager.js';
import type { ProxyOptions } from '../upstream/proxy.js';
import { checkString, luaTypeName } from './args.js';
import { luaContext } from './context.js';
import { proxyOptionsFrom } from './proxy-options.js';

export interface ProxyBindingOptions {
  registry: Registry;
  owner: string;
  logger: Logger;
  /** Upstream connections this plugin may hold (plugin_limits.upstreams; unlimited if absent). */
  maxUpstreams?: number;
  /** Bytes of one upstream answer (plugin_limits.upstream_answer_bytes; the default if absent). */
  answerBytes?: number;
  /** Requests written together on one upstream socket (plugin_limits.upstream_pipeline). */
  pipelineDepth?: number;
  /** Tools, prompts and resources imported per upstream (plugin_limits.registrations). */
  maxEntries?: number;
  /** An upstream's requests to the hub taken per second (upstream_requests_per_second). */
  requestsPerSecond?: number;
  /** ... and handled at once (plugin_limits.upstream_requests_in_flight). */
  requestsInFlight?: number;
  /** Least time between imports an upstream's list_changed asks for (upstream_import_interval_ms). */
  importIntervalMs?: number;
}

/** Longest a `mcp.proxy` call waits for the first import before returning `false, err`. */
const FIRST_IMPORT_WAIT_MS = 5000;

const WRAPPER = String.raw`
local start, wait = mcp.proxy, mcp.__proxy_wait
mcp.__proxy_wait = nil
local pcall, error, type = pcall, error, type
mcp.proxy = function(url, opts)
  local t, a
  if type(opts) == "table" then t, a = opts.transform_arguments, opts.on_auth_error end
  local ok, key = pcall(start, url, opts, t, a)
  if not ok then error(key, 2) end
  return wait(key)
end
`;

export function installProxyApi(state: LuaState, opts: ProxyBindingOptions): void {
  const { registry, owner } = opts;
  const manager = upstreamsOf(registry);
  const waits = new Map<string, Promise<LuaMulti | boolean>>();
  let nextKey = 1;

  const callbackRef = (call: HostCall, i: number, field: string): number | undefined => {
    const t = call.typeOf(i);
    if (t === LuaType.Nil || t === LuaType.None) return undefined;
    if (t !== LuaType.Function)
      throw new LuaArgumentError(
        `bad argument #2 to 'proxy' (opts.${field} must be a function, got ${luaTypeName(call, i)})`,
      );
    return call.ref(i);
  };

  const start = (args: unknown[], call: HostCall): string => {
    const url = checkString(args, call, 1, 'proxy');
    if (!/^(https?:\/\/|stdio:)/.test(url))
      throw new LuaArgumentError(
        `bad argument #1 to 'proxy' (http(s)://... or stdio:<command line> expected, got '${url}')`,
      );
    const t = call.typeOf(2);
    if (t !== LuaType.Nil && t !== LuaType.None && t !== LuaType.Table)
      throw new LuaArgumentError(
        `bad argument #2 to 'proxy' (table expected, got ${luaTypeName(call, 2)})`,
      );
    const given = (Array.isArray(args[1]) ? {} : (args[1] ?? {})) as Record<string, unknown>;
    const proxyOpts = proxyOptionsFrom(given, opts);
    const transformRef = callbackRef(call, 3, 'transform_arguments');
    const authRef = callbackRef(call, 4, 'on_auth_error');
    attachCallbacks(state, proxyOpts, transformRef, authRef);
    const max = opts.maxUpstreams ?? Infinity;
    if (manager.get(owner, url) === undefined && manager.countOwned(owner) >= max) {
      throw new LuaArgumentError(
        `mcp.proxy refused: upstream limit exceeded: a plugin may hold at most ${max} upstream connections (plugin_limits.upstreams)`,
      );
    }
    const key = String(nextKey++);
    waits.set(
      key,
      manager.proxy(owner, url, proxyOpts, state, opts.logger).then(async (proxy) => {
        await proxy.settle(Math.min(proxyOpts.connectTimeoutMs ?? 10_000, FIRST_IMPORT_WAIT_MS));
        if (proxy.connection.state === 'connected') return true;
        return new LuaMulti([
          false,
          `upstream ${url} is not connected yet (retrying in the background): ${proxy.connection.lastError ?? 'still connecting'}`,
        ]);
      }),
    );
    return key;
  };

  state.defineLibrary('mcp', {
    proxy: { fn: start },
    __proxy_wait: {
      async: true,
      fn: async (args) => {
        const key = String(args[0]);
        const wait = waits.get(key);
        waits.delete(key);
        if (!wait) throw new LuaArgumentError('mcp.proxy: unknown wait');
        return wait;
      },
    },
    remove_proxy: {
      fn: (args, call) => {
        const url = checkString(args, call, 1, 'remove_proxy');
        const existed = manager.get(owner, url) !== undefined;
        void manager.remove(owner, url);
        return existed;
      },
    },
  });
  state.exec(WRAPPER, '=[moonhub proxy]');
}

/** Turns the Lua callbacks `transform_arguments` and `on_auth_error` into the proxy's hooks. */
function attachCallbacks(
  state: LuaState,
  proxyOpts: ProxyOptions,
  transformRef: number | undefined,
  authRef: number | undefined,
): void {
  if (transformRef !== undefined) {
    proxyOpts.transformArguments = async (name, input, ctx: CallContext) => {
      const [value] = await state.call(transformRef, [name, input, luaContext(ctx)], {
        signal: ctx.signal,
      });
      if (value === undefined || value === null) return undefined;
      if (typeof value !== 'object' || Array.isArray(value))
        throw new Error('transform_arguments must return a table or nil');
      return value as Record<string, unknown>;
    };
  }
  if (authRef !== undefined) {
    proxyOpts.onAuthError = async (status) => {
      const [value] = await state.call(authRef, [status]);
      if (typeof value === 'string') return { token: value };
      if (value && typeof value === 'object') {
        const v = value as Record<string, unknown>;
        return {
          token: typeof v.token === 'string' ? v.token : undefined,
          headers: v.headers as Record<string, string> | undefined,
        };
      }
      return {};
    };
  }
}

/** Plugin reload bookkeeping: see UpstreamManager.settleOwner. */
export function settleUpstreams(
  registry: Registry,
  owner: string,
  kept: object | undefined,
  failed?: object,
): Promise<void> {
  return upstreamsOf(registry).settleOwner(owner, kept, failed);
}

/** `mcp.reset(source)`: closes the proxies of `source` (all proxies when it is nil). */
export function closeUpstreams(registry: Registry, owner: string | undefined): Promise<void> {
  const manager = upstreamsOf(registry);
  return owner === undefined ? manager.stop() : manager.settleOwner(owner, undefined);
}
