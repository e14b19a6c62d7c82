/**
 * Who may see and call what: wires the sessions database, the principal directory, the chosen
 * authentication mode, the per-principal views and the admin API into the hooks the transports
 * take (src/server knows nothing of any of them). One object per hub process.
 */
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from './log.js';
import type { Registry } from './registry/registry.js';
import type { CallContext, OwnerFilter } from './registry/types.js';
import { wireError } from './errors.js';
import {
  createRequestGuard,
  type HttpServerOptions,
  type McpHttpHandler,
  type OriginPolicy,
  type RequestScope,
  type StdioOptions,
} from './server/index.js';
import type { Settings } from './config/settings.js';
import { DATABASE_FILE, SessionStore } from './sessions/store.js';
import { adminApi } from './sessions/admin-api.js';
import { SessionSync } from './sessions/redis-sync.js';
import { DEFAULT_COMMAND_TIMEOUT_MS } from './cluster/redis.js';
import { PrincipalDirectory, sessionPrincipal } from './auth/principals.js';
import { oauthAuthenticator, tokenAuthenticator, type Authenticate } from './auth/authenticate.js';
import { METADATA_PATH, metadataDocument, metadataUrlFor, sendMetadata } from './auth/metadata.js';
import { ScopeSource } from './views/source.js';
import { Views } from './views/views.js';

/** Where OAuth clients look for an authorization server or register themselves. */
const OAUTH_PATHS = /^\/(\.well-known\/(oauth-|openid-configuration)|register$|authorize$|token$)/;

/**
 * Token mode has no OAuth: a client that tries it anyway after a refusal (mcp-remote, mcporter,
 * the Inspector do) gets a 404 whose body is an OAuth error in the hub's words, which they show,
 * instead of a bare "Not Found" that ends in "Dynamic Client Registration rejected".
 */
function noOAuthHere(req: IncomingMessage, res: ServerResponse): boolean {
  const path = (req.url ?? '/').split('?')[0]!;
  if (!OAUTH_PATHS.test(path)) return false;
  req.resume();
  res.writeHead(404, { 'content-type': 'application/json', 'cache-control': 'no-store' });
  res.end(
    JSON.stringify({
      error: 'invalid_request',
      error_description:
        'this moonhub hub takes session tokens, not OAuth: the token sent is missing, wrong or revoked; ' +
        'get one with `moonhub session create` and send it as `Authorization: Bearer mhs_...`',
    }),
  );
  return true;
}

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '::1', '[::1]']);

export function isLoopback(host: string): boolean {
  return LOOPBACK.has(host.toLowerCase());
}

/**
 * Auth mode none on a non-loopback address is refused unless forced (`--force` or
 * `auth.allow_remote_none`), and then loudly warned about.
 */
export function checkExposure(s: Settings, force: boolean, logger: Logger): void {
  if (s.authMode !== 'none' || isLoopback(s.host)) return;
  if (!force && s.config.auth?.allow_remote_none !== true)
    throw new Error(
      `refusing to serve ${s.host} without authentication: anyone who can reach it could call every tool. ` +
        'Use auth mode token or oauth (--auth token), bind 127.0.0.1, or pass --force to do it anyway',
    );
  const warning =
    'WARNING: serving WITHOUT AUTHENTICATION on a non-loopback address; anyone who can reach it can call every tool';
  logger.warn({ host: s.host }, warning);
  process.stderr.write(`moonhub: ${warning} (${s.host})\n`);
}

export interface AccessOptions {
  settings: Settings;
  registry: Registry;
  logger: Logger;
  /** Watch the config file and manifests (default true). */
  watch?: boolean;
  /** The HTTP endpoint's Host/Origin policy, applied to the admin API too. */
  originPolicy?: OriginPolicy;
  /** How often the sessions database is checked for revocations (default 500 ms). */
  pollMs?: number;
}

type ViewHooks = Pick<HttpServerOptions, 'filterFor' | 'contextFor' | 'viewChanged' | 'viewEvents'>;

export class Access {
  private store: SessionStore | undefined;
  private url: string | undefined;
  private readonly directory: PrincipalDirectory;
  private readonly poller: NodeJS.Timeout;
  private storeVersion = -1;
  /** Told when the sessions database changed (a revocation may end streams held elsewhere). */
  private readonly sessionListeners = new Set<() => void>();
  private http: McpHttpHandler | undefined;
  /** With `cluster.redis`: the sessions database as a replica of the cluster's sessions. */
  private sync: SessionSync | undefined;

  private constructor(
    private readonly opts: AccessOptions,
    private readonly source: ScopeSource,
    readonly views: Views,
    directory: PrincipalDirectory,
    store: SessionStore | undefined,
  ) {
    this.directory = directory;
    this.store = store;
    this.poller = setInterval(() => this.pollStore(), opts.pollMs ?? 500);
    this.poller.unref();
  }

  static async open(opts: AccessOptions): Promise<Access> {
    const s = opts.settings;
    const source = await ScopeSource.open({
      config: s.config,
      configFile: s.configFile,
      logger: opts.logger,
      watch: opts.watch,
    });
    // The database is made when sessions are needed (token mode, or shared through Redis);
    // otherwise used if it exists.
    const redis = s.cluster.redis;
    const store =
      s.authMode === 'token' || redis !== undefined || existsSync(join(s.dataDir, DATABASE_FILE))
        ? SessionStore.open(s.dataDir)
        : undefined;
    const sync =
      redis === undefined || store === undefined
        ? undefined
        : await startSessionSync(store, s, opts.logger);
    let views: Views | undefined = undefined;
    const directory = new PrincipalDirectory(store, s.hub_id, () => views?.invalidate());
    views = new Views({
      registry: opts.registry,
      source,
      subjectOf: (principal) => directory.get(principal),
    });
    const access = new Access(opts, source, views, directory, store);
    access.sync = sync;
    return access;
  }

  /** The database, opened on first need once it exists (a CLI may create it while we run). */
  private sessions(): SessionStore | undefined {
    if (this.store === undefined && existsSync(join(this.opts.settings.dataDir, DATABASE_FILE))) {
      this.store = SessionStore.open(this.opts.settings.dataDir);
      this.directory.attach(this.store);
    }
    return this.store;
  }

  /** Revocations made by another process reach long-lived views (stdio, open streams). */
  private pollStore(): void {
    const store = this.store;
    if (store === undefined) return;
    const version = store.version();
    if (version === this.storeVersion) return;
    this.storeVersion = version;
    for (const listener of this.sessionListeners) listener();
    const revoked = this.directory.dropRevokedSessions();
    if (revoked.length === 0) return;
    this.views.invalidate();
    // A revoked session's 2025 sessions end now: their streams close, their calls abort.
    for (const principal of revoked) {
      const ended = this.http?.sessions.deleteWhere((s) => s.principal === principal) ?? 0;
      if (ended > 0) this.opts.logger.info({ principal, ended }, 'revoked session disconnected');
    }
  }

  /**
   * Calls `listener` whenever the sessions database changes (checked every `pollMs`, 500 ms):
   * the dashboard's live streams re-check their admin token then.
   */
  onSessionsChanged(listener: () => void): () => void {
    this.sessionListeners.add(listener);
    return () => this.sessionListeners.delete(listener);
  }

  /** The hub's endpoint, once listening: its URL (OAuth audience, metadata) and its sessions. */
  listening(url: string, handler: McpHttpHandler): void {
    this.url = this.opts.settings.publicUrl ?? url;
    this.http = handler;
  }

  private resourceUrl(): string {
    return this.url ?? this.opts.settings.publicUrl ?? 'http://127.0.0.1/mcp';
  }

  private viewHooks(): ViewHooks {
    const principalOf = (scope: RequestScope) => scope.principal ?? scope.session?.principal;
    return {
      filterFor: (scope) => this.views.filterFor(principalOf(scope)),
      contextFor: (scope, ctx: CallContext) => {
        const principal = principalOf(scope);
        const id = principal === undefined ? undefined : this.directory.get(principal);
        if (id === undefined) return;
        if (id.session_uuid !== undefined) ctx.session_uuid = id.session_uuid;
        if (id.agent !== undefined) ctx.agent_name = id.agent;
        if (id.target !== undefined) ctx.target = id.target;
      },
      // A revoked principal's leftover streams hear nothing more.
      viewChanged: (sink, kind) =>
        (sink.principal === undefined || this.directory.get(sink.principal) !== undefined) &&
        this.views.viewChanged(sink.principal, kind),
      viewEvents: (listener) => this.views.onViewChange(listener),
    };
  }

  /** Options for startHttpServer: authentication, views, the admin API and OAuth metadata. */
  httpOptions(): Pick<HttpServerOptions, 'authenticate' | 'otherRoutes'> & ViewHooks {
    const s = this.opts.settings;
    const fromFile = new Set(s.config.plugins?.dirs ?? []);
    const admin = adminApi({
      store: () => this.sessions(),
      hubId: s.hub_id,
      config: () => ({ ...s.config, ...this.source.config }),
      url: () => this.resourceUrl(),
      launch: {
        dataDir: s.dataDir,
        configFile: s.configFile,
        pluginDirs: s.dirs.filter((d) => !fromFile.has(d)),
      },
      guard: createRequestGuard(this.opts.originPolicy),
      onError: (err) => this.opts.logger.error({ err }, 'admin API failure'),
      ...this.replication(),
    });
    const oauth = s.config.auth?.oauth;
    const metadata =
      s.authMode === 'oauth' && oauth !== undefined
        ? (req: IncomingMessage, res: ServerResponse): boolean => {
            const path = (req.url ?? '/').split('?')[0]!;
            if (path !== METADATA_PATH && !path.startsWith(METADATA_PATH + '/')) return false;
            sendMetadata(
              res,
              req.method,
              metadataDocument(oauth.audience ?? this.resourceUrl(), oauth),
            );
            req.resume();
            return true;
          }
        : undefined;
    let authenticate: Authenticate | undefined;
    if (s.authMode === 'token')
      authenticate = tokenAuthenticator(
        this.sessions()!,
        s.hub_id,
        this.directory,
        this.replication().beforeCheck,
      );
    else if (s.authMode === 'oauth')
      authenticate = oauthAuthenticator({
        oauth: oauth!,
        audience: () => oauth!.audience ?? this.resourceUrl(),
        metadataUrl: () => metadataUrlFor(this.resourceUrl()),
        directory: this.directory,
        onError: (err) => this.opts.logger.warn({ err }, 'JWKS fetch failed'),
      });
    return {
      ...(authenticate === undefined ? {} : this.viewHooks()),
      authenticate,
      otherRoutes: (req, res) =>
        (metadata?.(req, res) ?? false) ||
        (s.authMode === 'token' && noOAuthHere(req, res)) ||
        admin(req, res),
    };
  }

  /**
   * Redis mode: the admin API answers a change once Redis has it, and tokens are checked after
   * the announcements already received (docs/scale-out.md "Sessions on Redis").
   */
  private replication(): Pick<
    Parameters<typeof adminApi>[0],
    'replicated' | 'onUnreplicated' | 'beforeCheck'
  > {
    const sync = this.sync;
    if (sync === undefined) return {};
    const wait = this.opts.settings.cluster.limits.commandTimeoutMs ?? DEFAULT_COMMAND_TIMEOUT_MS;
    return {
      replicated: (uuid) => sync.whenMerged(uuid, wait),
      onUnreplicated: (uuid, outcome) =>
        this.opts.logger.warn(
          { session_uuid: uuid, outcome },
          'admin change not confirmed by Redis; other instances get it when Redis answers',
        ),
      beforeCheck: () => sync.caughtUp(),
    };
  }

  /**
   * Options for serveStdio. With a session (`serve --stdio --session UUID`) the peer acts as that
   * session; it must exist, be active and belong to this hub.
   */
  stdioOptions(session: string | undefined): Pick<StdioOptions, 'principal'> & ViewHooks {
    if (session === undefined) {
      // The local user's connection is one session, as an HTTP 2025 session would be: handlers
      // that key data by caller (the inbox example) work over plain `serve --stdio` too.
      const own = `stdio-${randomUUID()}`;
      return {
        contextFor: (_scope, ctx: CallContext) => {
          ctx.session_uuid ??= own;
        },
      };
    }
    const principal = sessionPrincipal(session);
    if (this.sessions() === undefined || this.directory.get(principal) === undefined)
      throw new Error(
        `no active session ${session} of hub '${this.opts.settings.hub_id}' in ${this.opts.settings.dataDir}`,
      );
    const hooks = this.viewHooks();
    let logged = false;
    // Revoked while this peer runs: every request gets an error that says so (not "Unknown
    // tool"), and the log says it once.
    const filterFor: NonNullable<ViewHooks['filterFor']> = (scope) => {
      if (this.directory.get(principal) === undefined) {
        if (!logged) {
          logged = true;
          this.opts.logger.warn({ session }, 'stdio session revoked; refusing its requests');
        }
        throw wireError('session_revoked', { session });
      }
      return hooks.filterFor!(scope);
    };
    return { principal, ...hooks, filterFor };
  }

  /** `mcp.list_tools(session_uuid)`: what that session sees; null for an unknown one. */
  viewOfSession(uuid: string): OwnerFilter | null {
    if (this.sessions() === undefined) return null;
    const principal = sessionPrincipal(uuid);
    if (this.directory.get(principal) === undefined) return null;
    return this.views.filterFor(principal);
  }

  // ---- for the operator's routes (src/observe, src/dashboard) --------------------------------

  /** Redis mode: what to wait for before checking an admin token (SessionSync.caughtUp). */
  beforeTokenCheck(): (() => Promise<void>) | undefined {
    return this.replication().beforeCheck;
  }

  /** True when `token` is an active admin session's token of this hub. */
  isAdminToken(token: string): boolean {
    return this.sessions()?.verify(token, this.opts.settings.hub_id)?.role === 'admin';
  }

  /** Who a principal is (session, agent, target), or undefined for an unknown or revoked one. */
  identityOf(principal: string): { session_uuid?: string; agent?: string; target?: string } {
    return this.directory.get(principal) ?? {};
  }

  /** This hub's sessions (never tokens); none without a sessions database. */
  sessionList(): ReturnType<SessionStore['list']> {
    return this.sessions()?.list(this.opts.settings.hub_id) ?? [];
  }

  /** The HTTP endpoint's 2025 sessions, once listening (metrics: sessions and streams). */
  httpHandler(): McpHttpHandler | undefined {
    return this.http;
  }

  /** The config's scoping (targets, agents), for the dashboard's view of principals. */
  scopingConfig(): Settings['config'] {
    return { ...this.opts.settings.config, ...this.source.config };
  }

  async close(): Promise<void> {
    clearInterval(this.poller);
    this.views.close();
    await this.source.close();
    await this.sync?.close().catch(() => {});
    this.store?.close();
  }
}

/** Sessions shared through Redis: pulled at start, every change applied as it is announced. */
async function startSessionSync(
  store: SessionStore,
  s: Settings,
  logger: Logger,
): Promise<SessionSync> {
  try {
    return await SessionSync.start(store, {
      url: s.cluster.redis!,
      prefix: `${s.cluster.prefix ?? 'moonhub'}:${s.hub_id}`,
      commandTimeoutMs: s.cluster.limits.commandTimeoutMs,
      onRemoteChange: (row) =>
        logger.info(
          { session_uuid: row.uuid, revoked: row.revoked_at !== null },
          'session changed on another instance',
        ),
      onError: (err) => logger.warn({ err }, 'session replication through Redis failed'),
    });
  } catch (err) {
    store.close();
    throw err;
  }
}
