/** What an upstream connection (connection.ts) is opened with, and what each request may carry. */
import type { FetchLike, JSONRPCMessage } from '@modelcontextprotocol/client';
import type { ProgressSink } from './direct-http.js';
import type { OAuthSettings } from './oauth.js';
import type { UpstreamRelay } from './relay.js';
import type { AbortWatch, CallContext } from '../registry/types.js';

export type UpstreamState = 'connecting' | 'connected' | 'disconnected' | 'closed';

export interface ConnectionOptions {
  url: string;
  headers?: Record<string, string>;
  token?: string;
  env?: Record<string, string>;
  cwd?: string;
  /** Time to establish the connection and finish the handshake (default 10 s). */
  connectTimeoutMs?: number;
  /** Longest silence (no answer, no progress) allowed in a request (default 60 s). */
  idleTimeoutMs?: number;
  /** Longest total time of one request (default 60 s). */
  callTimeoutMs?: number;
  /** `auto` (2026-07-28, else 2025), `legacy` (2025 only) or a pinned revision. */
  versionMode?: 'auto' | 'legacy' | { pin: string };
  /** Protocol versions offered in the 2025 handshake, preferred first. */
  protocolVersions?: string[];
  fetch?: FetchLike;
  clientInfo?: { name: string; version: string };
  /** Capabilities declared to the upstream (what the relay can pass on to agents). */
  capabilities?: Record<string, unknown>;
  /** Try the old HTTP+SSE transport when a Streamable HTTP POST gets 404/405 (default true). */
  legacySseFallback?: boolean;
  /** Reconnect in the background after a failure or a dropped connection (default true). */
  autoReconnect?: boolean;
  /** First reconnect delay; doubles up to `maxBackoffMs` (defaults 250 ms, 30 s). */
  backoffMs?: number;
  maxBackoffMs?: number;
  /** Bytes of one answer on the direct path (JSON body or one event); default 16 MiB. */
  answerBytes?: number;
  /**
   * Plain-http upstreams: most requests of one event-loop turn written together on one socket
   * (HTTP/1.1 pipelining, raw-http.ts); 1 sends each on its own. Default 8.
   */
  pipelineDepth?: number;
  /**
   * Requests the upstream sends the hub (ping, sampling...) taken per second and handled at once
   * (request-gate.ts; defaults 50 and 16); the rest are dropped, and `onRequestsDropped` told.
   */
  requestsPerSecond?: number;
  requestsInFlight?: number;
  onRequestsDropped?: (message: string) => void;
  /** OAuth to the upstream (HTTP): discovery, registration, a headless authorization. */
  oauth?: OAuthSettings;
  /** Asked for new credentials on 401/403; returning nothing gives up. */
  onAuthError?: (status: number) => Promise<{ token?: string; headers?: Record<string, string> }>;
  onListChanged?: (kind: 'tools' | 'prompts' | 'resources') => void;
  /** Called after each successful (re)connect. */
  onConnected?: () => void;
  /** Called when the connection is lost or a connect attempt fails. */
  onDisconnected?: (reason: string) => void;
  onIncoming?: (message: JSONRPCMessage) => void;
  onSpawn?: (pid: number) => void;
  relay?: UpstreamRelay;
}

export interface RequestExtras {
  signal?: AbortSignal;
  /** The caller's abort without an AbortSignal (the direct path prefers it; see CallContext). */
  abortWatch?: AbortWatch;
  onProgress?: (p: { progress: number; total?: number; message?: string }) => void;
  /** Hears the upstream's progress when `onProgress` is not given (a CallPeer fits). */
  peer?: ProgressSink;
  timeoutMs?: number;
}

/** A call's cancellation without its peer (prompts and resources relay no progress), read lazily. */
export function cancelOnly(ctx: CallContext): RequestExtras {
  return {
    abortWatch: ctx.abortWatch,
    get signal() {
      return ctx.signal;
    },
  };
}
