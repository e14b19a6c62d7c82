/**
 * The three authentication modes of the MCP endpoint, as the HTTP server's `authenticate` hook:
 * `none` (no hook at all), `token` (moonhub session tokens from the sessions database) and
 * `oauth` (JWT access tokens of one issuer, checked against its JWKS, moonhub acting as an OAuth
 * 2.1 resource server). The client's token is used here and never passed on.
 */
import type { IncomingMessage } from 'node:http';
import type { AuthVerdict } from '../server/index.js';
import type { OAuthConfig } from '../config/config.js';
import type { SessionStore } from '../sessions/store.js';
import { bearerToken, refuse } from './challenge.js';
import { JwksCache } from './jwks.js';
import { JwtError, checkClaims, decodeJwt, scopesOf, signatureValid, ALGORITHMS } from './jwt.js';
import { sessionIdentity, type Identity, type PrincipalDirectory } from './principals.js';

export type Authenticate = (req: IncomingMessage) => AuthVerdict | Promise<AuthVerdict>;

const REALM = 'moonhub';

/**
 * `caughtUp` (sessions shared through Redis): resolves once the session changes already received
 * are applied to the store; the token is checked after it, so a revocation (or a new session)
 * announced before the request arrived is never missed because both woke the process together.
 */
export function tokenAuthenticator(
  store: SessionStore,
  hubId: string,
  directory: PrincipalDirectory,
  caughtUp?: () => Promise<void>,
): Authenticate {
  const check = (req: IncomingMessage): AuthVerdict => {
    const token = bearerToken(req);
    if (token === undefined)
      return refuse(
        401,
        { realm: REALM },
        'a bearer token is required: send `Authorization: Bearer mhs_...` with a session token ' +
          'from `moonhub session create` (the hub takes session tokens, not OAuth)',
      );
    const rec = token === '' ? undefined : store.verify(token, hubId);
    // A token that is wrong, revoked or of another hub gets 403, not 401: on a 401 OAuth clients
    // (mcp-remote, the Inspector) drop the body and start an OAuth discovery that cannot work
    // against session tokens; a 403 reaches their user with this message.
    if (rec === undefined || rec.role !== 'agent')
      return refuse(
        403,
        { realm: REALM, error: 'invalid_token' },
        'this moonhub session token is wrong, revoked or belongs to another hub; ' +
          'get a new one with `moonhub session create` (the hub takes session tokens, not OAuth)',
      );
    const identity = sessionIdentity(rec);
    directory.remember(identity);
    return { ok: true, principal: identity.principal };
  };
  return caughtUp === undefined ? check : (req) => caughtUp().then(() => check(req));
}

export interface OAuthAuthenticatorOptions {
  oauth: OAuthConfig;
  /** The audience tokens must carry (the configured one, or the hub's URL once known). */
  audience: () => string;
  /** The RFC 9728 metadata URL put in challenges. */
  metadataUrl: () => string;
  directory: PrincipalDirectory;
  onError?: (err: unknown) => void;
}

export function oauthAuthenticator(opts: OAuthAuthenticatorOptions): Authenticate {
  const { oauth, directory } = opts;
  const jwks = new JwksCache(oauth.jwks_uri, {
    onError: opts.onError,
    maxBytes: oauth.jwks_max_bytes,
    timeoutMs: oauth.jwks_timeout_ms,
  });
  const required = oauth.scopes ?? [];
  const agentClaim = oauth.agent_claim ?? 'agent';

  const invalid = (why: string): AuthVerdict =>
    refuse(
      401,
      { error: 'invalid_token', error_description: why, resource_metadata: opts.metadataUrl() },
      'invalid token',
    );

  function finish(
    jwt: ReturnType<typeof decodeJwt>,
    alg: string,
    key: Awaited<ReturnType<JwksCache['keyFor']>>,
  ): AuthVerdict {
    if (key === undefined || !signatureValid(jwt, alg, key))
      return invalid('the token signature does not verify');
    const payload = jwt.payload;
    try {
      checkClaims(payload, { issuer: oauth.issuer, audience: opts.audience() });
    } catch (err) {
      if (err instanceof JwtError) return invalid(err.message);
      throw err;
    }
    const held = scopesOf(payload);
    const missing = required.filter((s) => !held.has(s));
    if (missing.length > 0)
      return refuse(
        403,
        {
          error: 'insufficient_scope',
          scope: required.join(' '),
          resource_metadata: opts.metadataUrl(),
        },
        `the token lacks the scope ${missing.join(' ')}`,
      );
    const agent = payload[agentClaim];
    if (typeof agent !== 'string' || agent === '')
      return invalid(`the token has no '${agentClaim}' claim naming the agent`);
    const identity: Identity = { principal: `oauth:${payload.sub as string}`, agent };
    const target = oauth.target_claim === undefined ? undefined : payload[oauth.target_claim];
    if (typeof target === 'string' && target !== '') identity.target = target;
    directory.remember(identity);
    return { ok: true, principal: identity.principal };
  }

  return (req) => {
    const token = bearerToken(req);
    if (token === undefined)
      return refuse(
        401,
        {
          resource_metadata: opts.metadataUrl(),
          ...(required.length > 0 ? { scope: required.join(' ') } : {}),
        },
        'a bearer token is required',
      );
    let jwt: ReturnType<typeof decodeJwt>;
    try {
      jwt = decodeJwt(token);
    } catch (err) {
      if (err instanceof JwtError) return invalid(err.message);
      throw err;
    }
    const alg = jwt.header.alg;
    if (typeof alg !== 'string' || !Object.hasOwn(ALGORITHMS, alg))
      return invalid('the token is not signed with an accepted algorithm');
    const kid = typeof jwt.header.kid === 'string' ? jwt.header.kid : undefined;
    const key = jwks.keyFor(kid, alg);
    return key instanceof Promise ? key.then((k) => finish(jwt, alg, k)) : finish(jwt, alg, key);
  };
}
