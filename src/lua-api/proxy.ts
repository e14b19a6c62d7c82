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

function bad(field: string, expected: string, got: unknown): LuaArgumentError {
  return new LuaArgumentError(
    `bad argument #2 to 'proxy' (opts.${field} must be ${expected}, got ${describeValue(got)})`,
  );
}

function describeValue(v: unknown): string {
  if (v === undefined) return 'nil';
  if (Array.isArray(v)) return 'table';
  return typeof v === 'object' ? 'table' : typeof v;
}

function stringList(opts: Record<string, unknown>, field: string): string[] | undefined {
  const v = opts[field];
  if (v === undefined) return undefined;
  if (typeof v === 'string') return [v];
  if (Array.isArray(v) && v.every((x) => typeof x === 'string')) return v as string[];
  if (typeof v === 'object' && v !== null && Object.keys(v).length === 0) return [];
  throw bad(field, 'a list of strings', v);
}

function stringMap(
  opts: Record<string, unknown>,
  field: string,
): Record<string, string> | undefined {
  const v = opts[field];
  if (v === undefined) return undefined;
  if (typeof v !== 'object' || v === null || Array.isArray(v))
    throw bad(field, 'a table of strings', v);
  const out: Record<string, string> = {};
  for (const [k, x] of Object.entries(v)) {
    if (typeof x !== 'string' && typeof x !== 'number') throw bad(`${field}.${k}`, 'a string', x);
    out[k] = String(x);
  }
  return out;
}

function optNumber(opts: Record<string, unknown>, field: string): number | undefined {
  const v = opts[field];
  if (v === undefined) return undefined;
  if (typeof v !== 'number' || !(v > 0)) throw bad(field, 'a positive number', v);
  return v;
}

function optStr(opts: Record<string, unknown>, field: string): string | undefined {
  const v = opts[field];
  if (v === undefined) return undefined;
  if (typeof v !== 'string') throw bad(field, 'a string', v);
  return v;
}

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
    const pin = given.pin;
    if (pin !== undefined && typeof pin !== 'boolean') throw bad('pin', 'a boolean', pin);
    const forward = given.forward_context;
    if (forward !== undefined && typeof forward !== 'boolean')
      throw bad('forward_context', 'a boolean', forward);
    const proxyOpts: ProxyOptions = {
      prefix: optStr(given, 'prefix'),
      token: optStr(given, 'token'),
      headers: stringMap(given, 'headers'),
      env: stringMap(given, 'env'),
      cwd: optStr(given, 'cwd'),
      include: stringList(given, 'include'),
      exclude: stringList(given, 'exclude'),
      timeoutMs: optNumber(given, 'timeout_ms'),
      connectTimeoutMs: optNumber(given, 'connect_timeout_ms'),
      idleTimeoutMs: optNumber(given, 'idle_timeout_ms'),
      pin: pin === true,
      forwardContext: forward !== false,
      answerBytes: opts.answerBytes,
      pipelineDepth: opts.pipelineDepth,
    };
    const oauth = given.oauth;
    if (oauth === true || (typeof oauth === 'object' && oauth !== null && !Array.isArray(oauth))) {
      const o = (oauth === true ? {} : oauth) as Record<string, unknown>;
      const grant = optStr(o, 'grant');
      const grants = ['authorization_code', 'client_credentials', 'jwt_bearer', 'cross_app_access'];
      if (grant !== undefined && !grants.includes(grant))
        throw bad('oauth.grant', grants.map((g) => `'${g}'`).join(', '), grant);
      if (o.dpop !== undefined && typeof o.dpop !== 'boolean')
        throw bad('oauth.dpop', 'a boolean', o.dpop);
      proxyOpts.oauth = {
        grant: grant as NonNullable<ProxyOptions['oauth']>['grant'],
        assertion: optStr(o, 'assertion'),
        idpTokenEndpoint: optStr(o, 'idp_token_endpoint'),
        idpClientId: optStr(o, 'idp_client_id'),
        idpClientSecret: optStr(o, 'idp_client_secret'),
        idToken: optStr(o, 'id_token'),
        dpop: o.dpop === true,
        privateKeyPem: optStr(o, 'private_key_pem'),
        signingAlgorithm: optStr(o, 'signing_algorithm'),
        clientId: optStr(o, 'client_id'),
        clientSecret: optStr(o, 'client_secret'),
        clientMetadataUrl: optStr(o, 'client_metadata_url'),
        scope: optStr(o, 'scope'),
        redirectUrl: optStr(o, 'redirect_url'),
      };
    } else if (oauth !== undefined && oauth !== false) throw bad('oauth', 'true or a table', oauth);
    const transformRef = callbackRef(call, 3, 'transform_arguments');
    const authRef = callbackRef(call, 4, 'on_auth_error');
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
