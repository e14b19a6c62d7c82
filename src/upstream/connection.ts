/**
 * One connection to an upstream MCP server, on the official SDK client: it connects (2026-07-28
 * tried first over HTTP, the 2025 handshake as fallback, the old HTTP+SSE transport when the
 * server needs it), keeps timeouts on connecting, on silence and on whole calls, re-initializes
 * an expired session and retries the request once, and reconnects with backoff after the
 * upstream goes away (a stdio child is restarted the same way and killed on close).
 * Proxied calls to a Streamable HTTP upstream take the direct path (`call`, direct-http.ts) on the
 * session the SDK client negotiated; everything else goes through the SDK client.
 */
import type { Agent } from 'node:http';
import {
  Client,
  StreamableHTTPClientTransport,
  parseJSONRPCMessage,
} from '@modelcontextprotocol/client';
import type { Transport } from '@modelcontextprotocol/client';
import {
  DEFAULT_ANSWER_BYTES,
  DirectHttp,
  INPUT_REQUIRED,
  directAgent,
  type DirectMethod,
} from './direct-http.js';
import { continueAuth, oauthProvider } from './oauth.js';
import { createTransport, upstreamKind, type UpstreamKind } from './transports.js';
import { UpstreamError } from './upstream-error.js';
import { describe, isConnectionError, statusOf } from './connection-errors.js';
import type { ConnectionOptions, RequestExtras, UpstreamState } from './connection-options.js';
import { DEFAULT_PIPELINE_DEPTH, RawHttpPool } from './raw-http.js';
import { RequestGate } from './request-gate.js';
import { boundedFetch } from './bounded-fetch.js';
import { Reconnect } from './reconnect.js';

export { UpstreamError } from './upstream-error.js';

export type { ConnectionOptions, RequestExtras, UpstreamState } from './connection-options.js';
export { describe } from './connection-errors.js';

/** How the SDK client makes each call the direct path makes (its fallback). */
const SDK_CALLS: Record<
  DirectMethod,
  (c: Client, params: Record<string, unknown>, o: Record<string, unknown>) => Promise<unknown>
> = {
  'tools/call': (c, p, o) => c.callTool(p as { name: string }, o),
  'prompts/get': (c, p, o) => c.getPrompt(p as { name: string }, o),
  'resources/read': (c, p, o) => c.readResource(p as { uri: string }, o),
};

const NO_REFRESH = { autoRefresh: false, debounceMs: 0 } as const;

export const DEFAULT_CONNECT_TIMEOUT_MS = 10_000;
export const DEFAULT_CALL_TIMEOUT_MS = 60_000;

export class UpstreamConnection {
  readonly url: string;
  readonly kind: UpstreamKind;
  state: UpstreamState = 'disconnected';
  lastError: string | undefined;
  /** How many times a connection was established (restarts included). */
  connects = 0;
  attempts = 0;
  private client: Client | undefined;
  /** The direct path on the current client's session, when the upstream allows one. */
  private direct: DirectHttp | undefined;
  private directClient: Client | undefined;
  private agent: Agent | undefined;
  /** Plain-http upstreams: the direct path's own keep-alive sockets (raw-http.ts). */
  private pool: RawHttpPool | undefined;
  private connecting: Promise<Client> | undefined;
  private readonly retry: Reconnect;
  private token: string | undefined;
  private headers: Record<string, string>;
  private useSse = false;
  private readonly oauth: ReturnType<typeof oauthProvider> | undefined;
  private lastTransport: Transport | undefined;
  /** Requests in flight on the current client, aborted when its connection is lost. */
  private readonly inFlight = new Set<AbortController>();
  /** The upstream's own requests to the hub (ping, sampling...), bounded across reconnects. */
  private readonly gate: RequestGate;
  private readonly opts: ConnectionOptions;

  constructor(opts: ConnectionOptions) {
    this.opts = opts;
    this.url = opts.url;
    this.kind = upstreamKind(opts.url);
    this.useSse = this.kind === 'sse';
    this.retry = new Reconnect(opts.backoffMs, opts.maxBackoffMs);
    this.token = opts.token;
    this.headers = { ...opts.headers };
    this.oauth = opts.oauth && this.kind !== 'stdio' ? oauthProvider(opts.oauth) : undefined;
    this.gate = new RequestGate({
      perSecond: opts.requestsPerSecond,
      inFlight: opts.requestsInFlight,
      onDropped: opts.onRequestsDropped,
      onFlood: (why) => this.flooded(why),
    });
  }

  /** After the SDK ran the OAuth flow up to the redirect: hands it the code; false if none. */
  private async completeAuth(err: unknown): Promise<boolean> {
    if (!this.oauth) return false;
    return continueAuth(this.oauth, err, this.url, this.lastTransport, this.opts.fetch);
  }

  get sdkClient(): Client | undefined {
    return this.client;
  }

  /** Connects now (or joins the attempt in progress); rejects with what went wrong. */
  connect(): Promise<Client> {
    if (this.state === 'closed') return Promise.reject(new UpstreamError('the upstream is closed'));
    if (this.client && this.state === 'connected') return Promise.resolve(this.client);
    this.connecting ??= this.attempt().finally(() => (this.connecting = undefined));
    return this.connecting;
  }

  /** Starts connecting in the background; failures are retried with backoff. */
  start(): void {
    this.connect().catch(() => undefined);
  }

  private async attempt(): Promise<Client> {
    this.retry.cancel();
    this.state = 'connecting';
    this.attempts++;
    try {
      let client: Client;
      try {
        client = await this.open();
      } catch (err) {
        // An old server without Streamable HTTP answers the POST with 404/405: try HTTP+SSE.
        const status = statusOf(err);
        if (
          this.kind === 'http' &&
          !this.useSse &&
          this.opts.legacySseFallback !== false &&
          (status === 404 || status === 405)
        ) {
          this.useSse = true;
          client = await this.open();
        } else if (
          (await this.completeAuth(err)) ||
          ((status === 401 || status === 403) && (await this.reauthorize(status)))
        ) {
          client = await this.open();
        } else throw err;
      }
      if ((this.state as UpstreamState) !== 'connecting') {
        // Closed while connecting.
        await client.close().catch(() => undefined);
        throw new UpstreamError('the upstream was closed while connecting');
      }
      this.client = client;
      this.direct = this.directFor(client);
      this.directClient = client;
      this.state = 'connected';
      this.lastError = undefined;
      this.connects++;
      this.retry.connected();
      this.opts.onConnected?.();
      return client;
    } catch (err) {
      const e = describe(err, this.url);
      this.lastError = e.message;
      if ((this.state as UpstreamState) !== 'closed') {
        this.state = 'disconnected';
        this.opts.onDisconnected?.(e.message);
        this.scheduleRetry();
      }
      throw e;
    }
  }

  private async open(): Promise<Client> {
    const caps = this.opts.capabilities ?? {};
    const client = new Client(this.opts.clientInfo ?? { name: 'moonhub', version: '0.1.0' }, {
      capabilities: caps,
      versionNegotiation: {
        mode: this.kind === 'http' && !this.useSse ? (this.opts.versionMode ?? 'auto') : 'legacy',
      },
      supportedProtocolVersions: this.opts.protocolVersions,
      // No SDK debounce (trailing: a steady stream of list_changed put it off for ever); the
      // proxy paces its imports (import-pacer.ts).
      listChanged: this.opts.onListChanged
        ? {
            tools: { onChanged: () => this.opts.onListChanged?.('tools'), ...NO_REFRESH },
            prompts: { onChanged: () => this.opts.onListChanged?.('prompts'), ...NO_REFRESH },
            resources: { onChanged: () => this.opts.onListChanged?.('resources'), ...NO_REFRESH },
          }
        : undefined,
    });
    this.opts.relay?.attach(client, caps);
    const headers = { ...this.headers };
    if (this.token) headers.Authorization = `Bearer ${this.token}`;
    this.openHeaders = headers;
    const transport: Transport = createTransport(this.url, this.useSse ? 'sse' : this.kind, {
      headers,
      env: this.opts.env,
      cwd: this.opts.cwd,
      fetch: boundedFetch(this.opts.answerBytes ?? DEFAULT_ANSWER_BYTES, this.opts.fetch),
      authProvider: this.oauth,
      onIncoming: this.opts.onIncoming,
      onSpawn: this.opts.onSpawn,
      gate: this.gate,
    });
    this.lastTransport = transport;
    client.onclose = () => this.lost(client, 'the upstream closed the connection');
    // A broken response stream (the upstream died mid-call) must fail the calls waiting on it
    // now, not when their timeouts run out.
    client.onerror = (err) => {
      if (isConnectionError(err)) this.lost(client, describe(err, this.url).message);
    };
    await client.connect(transport, {
      timeout: this.opts.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS,
    });
    return client;
  }

  /** The headers the last client was opened with (the direct path sends the same). */
  private openHeaders: Record<string, string> = {};

  /**
   * The direct path for a fresh client: plain Streamable HTTP only (no custom fetch, OAuth or
   * message recording, which the SDK transport handles).
   */
  private directFor(client: Client): DirectHttp | undefined {
    const transport = client.transport as
      (Transport & { sessionId?: string; protocolVersion?: string }) | undefined;
    const era = client.getProtocolEra();
    const version = client.getNegotiatedProtocolVersion();
    if (
      this.kind !== 'http' ||
      this.useSse ||
      this.opts.fetch !== undefined ||
      this.oauth !== undefined ||
      this.opts.onIncoming !== undefined ||
      !(transport instanceof StreamableHTTPClientTransport) ||
      era === undefined ||
      version === undefined
    )
      return undefined;
    const url = new URL(this.url);
    this.agent ??= directAgent(url);
    if (url.protocol === 'http:')
      this.pool ??= new RawHttpPool(
        url.hostname.replace(/^\[(.*)\]$/, '$1'),
        Number(url.port) || 80,
        this.opts.pipelineDepth ?? DEFAULT_PIPELINE_DEPTH,
      );
    return new DirectHttp(
      {
        url,
        era,
        protocolVersion: transport.protocolVersion ?? version,
        sessionId: transport.sessionId,
        headers: this.openHeaders,
        clientInfo: this.opts.clientInfo ?? { name: 'moonhub', version: '0.1.0' },
        capabilities: this.opts.capabilities ?? {},
        answerBytes: this.opts.answerBytes ?? DEFAULT_ANSWER_BYTES,
        deliver: (message) => {
          try {
            transport.onmessage?.(parseJSONRPCMessage(message));
          } catch (err) {
            client.onerror?.(err as Error);
          }
        },
        cancelled: (id, reason) =>
          void client
            .notification({ method: 'notifications/cancelled', params: { requestId: id, reason } })
            .catch(() => undefined),
        networkFailed: (err) => this.lost(client, describe(err, this.url).message),
      },
      this.agent,
      this.pool,
    );
  }

  private forget(client: Client): void {
    if (this.client === client) this.client = undefined;
    if (this.directClient === client) {
      // Not an UpstreamError: like the SDK client's closed-connection error, retried once.
      this.direct?.abortAll(new Error('the connection to the upstream was closed'));
      this.direct = undefined;
      this.directClient = undefined;
    }
  }

  private lost(client: Client, reason: string): void {
    if (this.client !== client) return;
    if (this.directClient === client)
      this.direct?.abortAll(new UpstreamError(`connection lost: ${reason}`));
    this.forget(client);
    for (const ac of this.inFlight) ac.abort(new UpstreamError(`connection lost: ${reason}`));
    this.inFlight.clear();
    this.gate.reset();
    client.onclose = undefined;
    void client.close().catch(() => undefined);
    if (this.state === 'closed') return;
    this.state = 'disconnected';
    this.lastError = reason;
    this.opts.onDisconnected?.(reason);
    this.scheduleRetry();
  }

  /**
   * The upstream floods the hub with requests: each still costs the hub's thread its parsing,
   * so the connection is dropped, and made again after a delay that grows with each flood.
   */
  private flooded(why: string): void {
    // A stdio child is killed now: the SDK's close waits 2 s for it to go, reading its flood.
    // Through its ChildProcess (the SDK's own field), which never signals a pid already reaped.
    const child = (this.lastTransport as { _process?: { kill(s: string): boolean } } | undefined)
      ?._process;
    if (this.kind === 'stdio') child?.kill('SIGKILL');
    if (this.client) this.lost(this.client, `${why}; reconnecting in ${this.retry.flooded()} ms`);
  }

  private scheduleRetry(): void {
    if (this.opts.autoReconnect === false || this.state === 'closed') return;
    this.retry.schedule(() => this.start());
  }

  private async reauthorize(status: number): Promise<boolean> {
    if (!this.opts.onAuthError) return false;
    const fresh = await this.opts.onAuthError(status).catch(() => undefined);
    if (!fresh || (fresh.token === undefined && fresh.headers === undefined)) return false;
    if (fresh.token !== undefined) this.token = fresh.token;
    if (fresh.headers) this.headers = { ...this.headers, ...fresh.headers };
    return true;
  }

  /**
   * Runs one request on a live connection. An expired session (404, or the 400 some servers
   * send) is re-initialized and the request retried once; so is a 401/403 that `onAuthError`
   * answers with new credentials. Other failures become UpstreamErrors.
   */
  async request<T>(
    run: (client: Client, options: Record<string, unknown>) => Promise<T>,
    extras: RequestExtras = {},
  ): Promise<T> {
    const total = extras.timeoutMs ?? this.opts.callTimeoutMs ?? DEFAULT_CALL_TIMEOUT_MS;
    let retried = false;
    const peer = extras.peer;
    const onProgress =
      extras.onProgress ??
      (peer
        ? (p: { progress: number; total?: number; message?: string }) =>
            void peer.progress(p.progress, p.total, p.message)
        : undefined);
    for (;;) {
      const client = await this.connect();
      const ac = new AbortController();
      const onAbort = () => ac.abort(new UpstreamError('the call was cancelled'));
      if (extras.signal?.aborted) onAbort();
      extras.signal?.addEventListener('abort', onAbort, { once: true });
      this.inFlight.add(ac);
      const options: Record<string, unknown> = {
        timeout: Math.min(this.opts.idleTimeoutMs ?? total, total),
        maxTotalTimeout: total,
        resetTimeoutOnProgress: true,
        signal: ac.signal,
      };
      if (onProgress) options.onprogress = onProgress;
      try {
        return await run(client, options);
      } catch (err) {
        if (
          ac.signal.aborted &&
          ac.signal.reason instanceof UpstreamError &&
          !extras.signal?.aborted
        )
          throw ac.signal.reason;
        retried = await this.recover(client, err, retried, extras.signal);
      } finally {
        this.inFlight.delete(ac);
        extras.signal?.removeEventListener('abort', onAbort);
      }
    }
  }

  /**
   * A proxied `tools/call`, `prompts/get` or `resources/read`: over the direct path when this
   * upstream has one (and `direct` allows it), else through the SDK client. Same retries and
   * errors as `request`; resolves with the upstream's raw result.
   */
  async call(
    method: DirectMethod,
    params: Record<string, unknown>,
    extras: RequestExtras,
    direct = true,
    toolDefinition?: unknown,
  ): Promise<Record<string, unknown>> {
    const total = extras.timeoutMs ?? this.opts.callTimeoutMs ?? DEFAULT_CALL_TIMEOUT_MS;
    let retried = false;
    for (;;) {
      const client =
        this.state === 'connected' && this.client !== undefined
          ? this.client
          : await this.connect();
      const http = direct && this.directClient === client ? this.direct : undefined;
      if (http === undefined) break;
      let result: Record<string, unknown> | typeof INPUT_REQUIRED;
      try {
        // `extras` is read lazily: its signal and peer may be getters that build them.
        result = await http.call(method, params, {
          caller: extras,
          idleMs: Math.min(this.opts.idleTimeoutMs ?? total, total),
          totalMs: total,
        });
      } catch (err) {
        retried = await this.recover(client, err, retried, extras.abortWatch ?? extras.signal);
        continue;
      }
      // 2026-07-28 input rounds (sampling, elicitation) are the SDK client's to drive.
      if (result === INPUT_REQUIRED) break;
      return result;
    }
    // A tool's definition (x-mcp-header parameters) lets the SDK mirror them into headers.
    const sdkCall = (c: Client, o: Record<string, unknown>) =>
      SDK_CALLS[method](c, params, toolDefinition === undefined ? o : { ...o, toolDefinition });
    return (await this.request(sdkCall, extras)) as Record<string, unknown>;
  }

  /**
   * After a failed attempt: true to try once more (an expired session re-initialized, new
   * credentials, a dropped connection re-made), else throws the error in words.
   */
  private async recover(
    client: Client,
    err: unknown,
    retried: boolean,
    signal: { readonly aborted: boolean } | undefined,
  ): Promise<true> {
    if (signal?.aborted) throw new UpstreamError('the call was cancelled');
    if (err instanceof UpstreamError) throw err;
    const status = statusOf(err);
    // A 400 means an unknown session only when there was one (some servers send 400, not 404).
    const hadSession = Boolean((client.transport as { sessionId?: string })?.sessionId);
    const expired = status === 404 || (status === 400 && hadSession);
    const auth =
      (await this.completeAuth(err)) ||
      ((status === 401 || status === 403) && (await this.reauthorize(status)));
    const dropped = this.client !== client;
    if (!retried && (expired || auth || (dropped && isConnectionError(err)))) {
      await this.drop(client);
      return true;
    }
    if (expired || dropped) await this.drop(client);
    throw describe(err, this.url);
  }

  /** Forgets a client whose session is gone, without scheduling a background retry. */
  private async drop(client: Client): Promise<void> {
    this.forget(client);
    if (this.state === 'connected') this.state = 'disconnected';
    client.onclose = undefined;
    await client.close().catch(() => undefined);
  }

  /** Ends the session (HTTP DELETE where the transport does that) and kills a stdio child. */
  async close(): Promise<void> {
    this.state = 'closed';
    this.retry.cancel();
    const client = this.client;
    if (client) this.forget(client);
    this.agent?.destroy();
    this.agent = undefined;
    this.pool?.close();
    this.pool = undefined;
    this.gate.close();
    if (!client) return;
    client.onclose = undefined;
    const transport = client.transport as { terminateSession?: () => Promise<void> } | undefined;
    await transport?.terminateSession?.().catch(() => undefined);
    await client.close().catch(() => undefined);
  }
}
