/**
 * Checks `mcp.proxy`'s options table and turns it into the upstream's ProxyOptions, with errors in
 * Lua's wording (`bad argument #2 to 'proxy' (opts.x must be ...)`). The Lua callbacks are not
 * here: proxy.ts attaches them, as they need the plugin's state.
 */
import { LuaArgumentError } from '../lua/errors.js';
import type { ProxyOptions } from '../upstream/proxy.js';

/** The plugin's limits that go into every proxy's options. */
export interface ProxyLimits {
  answerBytes?: number;
  pipelineDepth?: number;
  maxEntries?: number;
  requestsPerSecond?: number;
  requestsInFlight?: number;
  importIntervalMs?: number;
}

/** ProxyOptions from the Lua options table `given` (the callbacks left unset). */
export function proxyOptionsFrom(
  given: Record<string, unknown>,
  limits: ProxyLimits,
): ProxyOptions {
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
    answerBytes: limits.answerBytes,
    pipelineDepth: limits.pipelineDepth,
    maxEntries: limits.maxEntries,
    requestsPerSecond: limits.requestsPerSecond,
    requestsInFlight: limits.requestsInFlight,
    importIntervalMs: limits.importIntervalMs,
  };
  const oauth = oauthOptions(given.oauth);
  if (oauth !== undefined) proxyOpts.oauth = oauth;
  return proxyOpts;
}

/** `opts.oauth`: true, or a table of grant settings; undefined when absent or false. */
function oauthOptions(oauth: unknown): ProxyOptions['oauth'] {
  if (oauth === true || (typeof oauth === 'object' && oauth !== null && !Array.isArray(oauth))) {
    const o = (oauth === true ? {} : oauth) as Record<string, unknown>;
    const grant = optStr(o, 'grant');
    const grants = ['authorization_code', 'client_credentials', 'jwt_bearer', 'cross_app_access'];
    if (grant !== undefined && !grants.includes(grant))
      throw bad('oauth.grant', grants.map((g) => `'${g}'`).join(', '), grant);
    if (o.dpop !== undefined && typeof o.dpop !== 'boolean')
      throw bad('oauth.dpop', 'a boolean', o.dpop);
    return {
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
  }
  if (oauth !== undefined && oauth !== false) throw bad('oauth', 'true or a table', oauth);
  return undefined;
}

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
