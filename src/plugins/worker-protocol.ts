/**
 * The messages between the hub's thread and a plugin's worker thread (plugins/isolated-plugin.ts
 * and plugins/plugin-worker.ts). Registrations flow up as plain specs (no handlers); calls flow
 * down with the caller's context as plain data, its client (peer), cancellation and view staying
 * on the hub's thread under the call's id.
 */
import type { MessagePort } from 'node:worker_threads';
import type { PluginSource } from './discover.js';

/** Fixed for a worker's life. */
export interface PluginWorkerSetup {
  source: PluginSource;
  code: Uint8Array;
  chunkname: string;
  hubId: string;
  memoryLimit?: number;
  loadTimeoutMs: number;
  logLevel: string;
  /** The plugin's `plugins.settings.<name>` (read with `secrets.get`). */
  settings?: Readonly<Record<string, unknown>>;
  /** The plugin's bounds (config plugin_limits). */
  limits?: Readonly<Record<string, number>>;
  /** Whether the hub knows sessions' views (`mcp.list_tools(session_uuid)`). */
  sessionViews: boolean;
  /** The shared words: synchronous answers, the backlog, the hub's close (sync-flag.ts). */
  flag: Int32Array;
  /** The port synchronous questions and their answers travel on. */
  syncPort: MessagePort;
}

export type EntryKindName = 'tool' | 'prompt' | 'resource';

/** A call's context as data: what is not data (peer, signal, view) stays with `call`. */
export interface PlainContext {
  session_uuid?: string;
  hub_id: string;
  agent_name?: string;
  target?: string;
  principal?: string;
  plugin?: string;
  request_id?: string | number;
  uri?: string;
  /** The other fields of a Lua caller's context table (never identity: see CallContext). */
  fields?: Record<string, string | number | boolean>;
}

/** A call's client (peer) as data: its methods are relayed by call id. */
export interface PeerWire {
  caps?: Record<string, unknown>;
  pollLater: boolean;
}

/** Who a call from the worker acts for: a running call of the hub's, a session's view, or the plugin. */
export interface Origin {
  call?: number;
  session?: string;
}

export type ToWorker =
  | {
      type: 'invoke';
      id: number;
      kind: EntryKindName | 'complete-prompt' | 'complete-resource';
      name: string;
      /** Tool arguments, prompt arguments, or a resource's template variables. */
      input: unknown;
      /**
       * The caller, as an entry of the worker's context table (context-table.ts) plus the
       * per-call fields; or, for a context that cannot be shared, `ctx` and `peer` themselves.
       */
      cx?: number;
      rid?: string | number;
      uri?: string;
      ctx?: PlainContext;
      /** The caller's client, when the call has one (its methods are relayed by call id). */
      peer?: PeerWire;
      /** For completions: the argument, the value typed so far, the arguments chosen. */
      complete?: { argument: string; value: string; context: Record<string, string> };
    }
  | { type: 'abort'; id: number }
  /** Defines entry `cx` of the worker's context table (sent before the first call naming it). */
  | { type: 'context'; cx: number; entry: { ctx: PlainContext; peer?: PeerWire } }
  /** Drops entry `cx` (calls already received keep the context they were given). */
  | { type: 'forget'; cx: number }
  | { type: 'answer'; id: number; ok: boolean; value?: unknown; error?: string; code?: string }
  /** A proxy's Lua callback, run for the hub's thread (answered with 'callback-done'). */
  | { type: 'callback'; id: number; url: string; which: 'transform' | 'auth'; args: unknown[] }
  | { type: 'close' }
  /** A reload or unload replaced this generation: its background tasks stop, it spawns no more. */
  | { type: 'retire' }
  /** Serve direct calls from an execute worker on `port` (plugins/direct-port.ts). */
  | { type: 'direct'; port: MessagePort; finished: Int32Array };

export type FromWorker =
  | { type: 'loaded'; memory?: number }
  | { type: 'failed'; message: string; lua: boolean }
  | { type: 'register'; kind: EntryKindName; spec: Record<string, unknown>; owner: string }
  | { type: 'remove'; kind: EntryKindName; name: string; owner?: string }
  | { type: 'reset'; owner?: string }
  | { type: 'batch'; open: boolean }
  | { type: 'resource-updated'; uri: string }
  | {
      type: 'result';
      id: number;
      ok: boolean;
      value?: unknown;
      error?: string;
      code?: string;
      /** The state's Lua memory after the call (metrics). */
      memory?: number;
    }
  /** The worker's code waits on this call's cancellation: the hub relays it. */
  | { type: 'watch'; id: number }
  | { type: 'peer'; id: number; method: 'log'; args: unknown[] }
  /** A request the worker waits for asynchronously (answered with 'answer'). */
  | {
      type: 'request';
      id: number;
      op: AsyncOp;
      args: unknown[];
      origin: Origin;
      ctx?: PlainContext;
    }
  | { type: 'callback-done'; id: number; ok: boolean; value?: unknown; error?: string }
  /** A task (`task.spawn`) started, with its time limit: the hub keeps a hard stop for it. */
  | { type: 'task'; id: number; ms: number; background: boolean }
  | { type: 'task-end'; id: number }
  /** Calls the worker refused by a limit since its last report (metric label, count). */
  | { type: 'refused'; limit: string; count: number }
  | { type: 'closed' };

export type AsyncOp =
  | 'callTool'
  | 'getPrompt'
  | 'readResource'
  | 'peerRequest'
  /** mcp.proxy: [url, options without callbacks, has transform, has on_auth_error, settle ms]. */
  | 'proxy'
  | 'removeProxy'
  /** [owner] (null: every proxy of the hub, as `mcp.reset()` means it). */
  | 'settleUpstreams';

/** Synchronous requests (the worker blocks on `flag` until the answer is on its port). */
export type SyncOp =
  | 'listTools'
  | 'listPrompts'
  | 'listResources'
  | 'listResourceTemplates'
  | 'countTools'
  | 'countPrompts'
  | 'countResources'
  | 'sessionView'
  | 'proxyExists'
  | 'progress'
  | 'pollLater';

export interface SyncRequest {
  op: SyncOp;
  /** Names the question: its answer carries it (a late answer to an earlier one is dropped). */
  seq: number;
  /**
   * How many messages the worker had posted on its own port before asking: the hub answers only
   * once it has handled them, so a question sees the worker's earlier changes (a `mcp.reset`
   * before `mcp.list_tools`) although the two travel on different ports.
   */
  after: number;
  origin: Origin;
  args: unknown[];
}
