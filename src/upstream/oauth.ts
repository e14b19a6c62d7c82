/**
 * OAuth for upstreams, without a person at a browser: the SDK transport discovers the
 * authorization server, registers the hub (dynamic registration, a client metadata document URL,
 * or pre-registered credentials) and asks us to "redirect" to the authorization URL; we fetch it
 * and read the code from the redirect, which works with authorization servers that approve
 * machine clients without interaction. When a person is needed, the error says where to go.
 * Tokens are kept in memory for the connection's life.
 */
import { ClientCredentialsProvider, PrivateKeyJwtProvider } from '@modelcontextprotocol/client';
import type { OAuthClientProvider } from '@modelcontextprotocol/client';

export interface OAuthSettings {
  /** `authorization_code` (default, headless) or `client_credentials` (machine to machine). */
  grant?: 'authorization_code' | 'client_credentials';
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
  private readonly settings: OAuthSettings;

  constructor(settings: OAuthSettings) {
    this.settings = settings;
    this.clientMetadataUrl = settings.clientMetadataUrl;
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

/** The provider for the settings: headless authorization code, or a client_credentials grant. */
export function oauthProvider(settings: OAuthSettings): OAuthClientProvider & {
  pendingCallback?: URLSearchParams;
} {
  if (settings.grant !== 'client_credentials') return new HeadlessOAuthProvider(settings);
  if (!settings.clientId) throw new Error('oauth client_credentials needs client_id');
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
