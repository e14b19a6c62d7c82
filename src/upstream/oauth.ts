/**
 * OAuth for upstreams, without a person at a browser: the SDK transport discovers the
 * authorization server, registers the hub (dynamic registration, a client metadata document URL,
 * or pre-registered credentials) and asks us to "redirect" to the authorization URL; we fetch it
 * and read the code from the redirect, which works with authorization servers that approve
 * machine clients without interaction. When a person is needed, the error says where to go.
 * Tokens are kept in memory for the connection's life.
 */
import {
  ClientCredentialsProvider,
  CrossAppAccessProvider,
  DpopSession,
  IssuerMismatchError,
  PrivateKeyJwtProvider,
  auth,
  discoverAuthorizationServerMetadata,
  discoverOAuthProtectedResourceMetadata,
  requestJwtAuthorizationGrant,
} from '@modelcontextprotocol/client';
import type { FetchLike, OAuthClientProvider } from '@modelcontextprotocol/client';

export interface OAuthSettings {
  /**
   * `authorization_code` (default, headless), `client_credentials` (machine to machine),
   * `jwt_bearer` (a workload's JWT as the grant, RFC 7523) or `cross_app_access` (an enterprise
   * IdP's ID token exchanged for an ID-JAG, then a JWT bearer grant; SEP-990).
   */
  grant?: 'authorization_code' | 'client_credentials' | 'jwt_bearer' | 'cross_app_access';
  /** jwt_bearer: the JWT presented as the grant. */
  assertion?: string;
  /** cross_app_access: the IdP's token endpoint, the hub's client there, and the user's ID token. */
  idpTokenEndpoint?: string;
  idpClientId?: string;
  idpClientSecret?: string;
  idToken?: string;
  /** Sender-constrained tokens (DPoP, RFC 9449), authorization_code grant. */
  dpop?: boolean;
  clientId?: string;
  clientSecret?: string;
  /** For client_credentials with a signed JWT (private_key_jwt) instead of a secret. */
  privateKeyPem?: string;
  signingAlgorithm?: string;
  /** An https URL of a client ID metadata document (used where the server supports it). */
  clientMetadataUrl?: string;
  scope?: string;
  redirectUrl?: string;
}

type Provider = OAuthClientProvider;
type ClientInfo = Awaited<ReturnType<Provider['clientInformation']>>;
type Tokens = Awaited<ReturnType<Provider['tokens']>>;

export class HeadlessOAuthProvider implements OAuthClientProvider {
  private info: ClientInfo;
  private stored: Tokens;
  private verifier = '';
  private discovery: Awaited<ReturnType<NonNullable<Provider['discoveryState']>>>;
  /** The redirect's query (code, state, iss) waiting for `finishAuth`. */
  pendingCallback: URLSearchParams | undefined;
  readonly clientMetadataUrl: string | undefined;
  /** Present only with `dpop`: the SDK binds tokens to this key when the method exists. */
  dpop?: () => Promise<DpopSession>;
  private readonly settings: OAuthSettings;

  constructor(settings: OAuthSettings) {
    this.settings = settings;
    this.clientMetadataUrl = settings.clientMetadataUrl;
    if (settings.dpop) {
      let session: Promise<DpopSession> | undefined;
      this.dpop = () => (session ??= DpopSession.create());
    }
    if (settings.clientId) {
      this.info = {
        client_id: settings.clientId,
        client_secret: settings.clientSecret,
      } as ClientInfo;
    }
  }

  get redirectUrl(): string {
    return this.settings.redirectUrl ?? 'http://127.0.0.1/moonhub/oauth/callback';
  }

  get clientMetadata(): Provider['clientMetadata'] {
    const meta: Record<string, unknown> = {
      client_name: 'moonhub',
      redirect_uris: [this.redirectUrl],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: this.settings.clientSecret ? 'client_secret_basic' : 'none',
    };
    if (this.settings.scope) meta.scope = this.settings.scope;
    return meta as Provider['clientMetadata'];
  }

  clientInformation(): ClientInfo {
    return this.info;
  }

  saveClientInformation(info: NonNullable<ClientInfo>): void {
    this.info = info;
  }

  tokens(): Tokens {
    return this.stored;
  }

  saveTokens(tokens: NonNullable<Tokens>): void {
    this.stored = tokens;
    // The discovery state binds one authorization to its server (SEP-2352); the next one starts
    // from a fresh discovery, so a resource that moved to another authorization server is seen.
    this.discovery = undefined;
  }

  saveCodeVerifier(verifier: string): void {
    this.verifier = verifier;
  }

  codeVerifier(): string {
    return this.verifier;
  }

  /** Kept with the code verifier so the SDK can check the callback's authorization server. */
  saveDiscoveryState(state: NonNullable<HeadlessOAuthProvider['discovery']>): void {
    this.discovery = state;
  }

  discoveryState(): HeadlessOAuthProvider['discovery'] {
    return this.discovery;
  }

  /**
   * The 2025-03-26 revision has no protected resource metadata: the authorization server is the
   * MCP server's origin, its metadata at that origin's RFC 8414 well-known URL, with /authorize,
   * /token and /register as defaults. The SDK checks the metadata's issuer against that origin
   * (RFC 8414 §3.3); servers of that revision named their authorization server with a path on
   * the same origin (e.g. `https://host/oauth`), which the revision gave the client no other way
   * to learn. So, only when the resource has no protected resource metadata (neither in its 401
   * nor at the well-known URLs) and the metadata came from the MCP server's own origin, an
   * issuer on that same origin is accepted and kept as the discovery state of this one
   * authorization. Any other mismatch still fails the connection.
   */
  async adoptLegacyServer(
    err: IssuerMismatchError,
    serverUrl: string,
    resourceMetadataUrl: URL | undefined,
    fetchFn: FetchLike,
  ): Promise<boolean> {
    const origin = new URL('/', serverUrl).href;
    if (err.kind !== 'metadata' || err.expected !== origin || resourceMetadataUrl) return false;
    if (!sameOrigin(err.received, origin)) return false;
    const prm = await discoverOAuthProtectedResourceMetadata(serverUrl, {}, fetchFn).then(
      () => true,
      () => false,
    );
    if (prm) return false;
    const metadata = await discoverAuthorizationServerMetadata(origin, {
      fetchFn,
      skipIssuerValidation: true,
    });
    if (!metadata || !sameOrigin(metadata.issuer, origin)) return false;
    this.discovery = { authorizationServerUrl: origin, authorizationServerMetadata: metadata };
    return true;
  }

  async redirectToAuthorization(url: URL): Promise<void> {
    const res = await fetch(url, { redirect: 'manual' });
    const location = res.headers.get('location');
    const params = location ? new URL(location, url).searchParams : undefined;
    if (!params?.get('code')) {
      const why = params?.get('error') ?? `HTTP ${res.status}`;
      throw new Error(
        `the authorization server wants a person to approve moonhub (${why}); open ${url.href}`,
      );
    }
    this.pendingCallback = params;
  }
}

type UpstreamProvider = OAuthClientProvider & { pendingCallback?: URLSearchParams };

/**
 * Carries an OAuth flow on after `client.connect` failed inside it: hands the code of a headless
 * authorization to the transport, or first adopts a 2025-03-26 authorization server (below).
 * True when the connection should be opened again.
 */
export async function continueAuth(
  provider: UpstreamProvider,
  err: unknown,
  serverUrl: string,
  transport: unknown,
  fetchFn?: FetchLike,
): Promise<boolean> {
  const t = transport as {
    finishAuth?: (p: URLSearchParams) => Promise<void>;
    _resourceMetadataUrl?: URL;
  };
  if (provider instanceof HeadlessOAuthProvider && err instanceof IssuerMismatchError) {
    const f = fetchFn ?? fetch;
    if (!(await provider.adoptLegacyServer(err, serverUrl, t._resourceMetadataUrl, f)))
      return false;
    if ((await auth(provider, { serverUrl, fetchFn: f })) === 'AUTHORIZED') return true;
  } else if ((err as Error)?.name !== 'UnauthorizedError') return false;
  const callback = provider.pendingCallback;
  if (!callback) return false;
  provider.pendingCallback = undefined;
  await t.finishAuth?.(callback);
  return true;
}

/** The provider for the settings: headless authorization code, or a client_credentials grant. */
export function oauthProvider(settings: OAuthSettings): UpstreamProvider {
  const grant = settings.grant ?? 'authorization_code';
  if (grant === 'authorization_code') return new HeadlessOAuthProvider(settings);
  if (!settings.clientId) throw new Error(`oauth ${grant} needs client_id`);
  if (grant === 'jwt_bearer') {
    if (!settings.assertion) throw new Error('oauth jwt_bearer needs assertion');
    return new JwtBearerProvider(settings.clientId, settings.assertion, settings.scope);
  }
  if (grant === 'cross_app_access') return crossAppAccess(settings, settings.clientId);
  if (settings.privateKeyPem)
    return new PrivateKeyJwtProvider({
      clientId: settings.clientId,
      privateKey: settings.privateKeyPem,
      algorithm: settings.signingAlgorithm ?? 'RS256',
      scope: settings.scope,
    });
  if (!settings.clientSecret)
    throw new Error('oauth client_credentials needs client_secret or private_key_pem');
  return new ClientCredentialsProvider({
    clientId: settings.clientId,
    clientSecret: settings.clientSecret,
    scope: settings.scope,
  });
}

/** SEP-990: the IdP's ID token becomes an ID-JAG for the upstream's authorization server. */
function crossAppAccess(settings: OAuthSettings, clientId: string): OAuthClientProvider {
  const { idpTokenEndpoint, idpClientId, idToken, clientSecret } = settings;
  if (!idpTokenEndpoint || !idpClientId || !idToken || !clientSecret)
    throw new Error(
      'oauth cross_app_access needs idp_token_endpoint, idp_client_id, id_token and client_secret',
    );
  return new CrossAppAccessProvider({
    clientId,
    clientSecret,
    assertion: async (ctx) =>
      (
        await requestJwtAuthorizationGrant({
          tokenEndpoint: idpTokenEndpoint,
          audience: ctx.authorizationServerUrl,
          resource: ctx.resourceUrl,
          idToken,
          clientId: idpClientId,
          clientSecret: settings.idpClientSecret,
          scope: ctx.scope,
          fetchFn: ctx.fetchFn,
        })
      ).jwtAuthGrant,
  });
}

const JWT_BEARER = 'urn:ietf:params:oauth:grant-type:jwt-bearer';

/**
 * RFC 7523 §2.1: a JWT the workload already holds (workload identity federation, SEP-1933) is
 * the grant itself; the client is public (`none`). A refused grant is not retried another way.
 */
class JwtBearerProvider implements OAuthClientProvider {
  private stored: Tokens;
  private readonly info: NonNullable<ClientInfo>;
  constructor(
    clientId: string,
    private readonly assertion: string,
    private readonly scope: string | undefined,
  ) {
    this.info = { client_id: clientId } as NonNullable<ClientInfo>;
  }
  get redirectUrl(): undefined {
    return undefined;
  }
  get clientMetadata(): Provider['clientMetadata'] {
    return {
      client_name: 'moonhub',
      redirect_uris: [],
      grant_types: [JWT_BEARER],
      token_endpoint_auth_method: 'none',
    } as Provider['clientMetadata'];
  }
  clientInformation(): ClientInfo {
    return this.info;
  }
  tokens(): Tokens {
    return this.stored;
  }
  saveTokens(tokens: NonNullable<Tokens>): void {
    this.stored = tokens;
  }
  redirectToAuthorization(): void {
    throw new Error('the jwt_bearer grant has no authorization step');
  }
  saveCodeVerifier(): void {}
  codeVerifier(): string {
    throw new Error('the jwt_bearer grant has no code verifier');
  }
  prepareTokenRequest(scope?: string): URLSearchParams {
    const params = new URLSearchParams({ grant_type: JWT_BEARER, assertion: this.assertion });
    const s = scope ?? this.scope;
    if (s) params.set('scope', s);
    return params;
  }
}

function sameOrigin(url: string | undefined, origin: string): boolean {
  try {
    return url !== undefined && new URL(url).origin === new URL(origin).origin;
  } catch {
    return false;
  }
}
