/** The messages between the hub's thread and an execute worker, each tagged with its run. */
import type { MessagePort } from 'node:worker_threads';
import type { PeerWire } from '../plugins/direct-port.js';
import type { PlainContext } from '../plugins/worker-protocol.js';
import type { ContentItem, ToolResult } from '../registry/types.js';
import type { DirectCallRecord } from './inner-observe.js';

/**
 * What a run may call directly on plugin workers (src/execute/direct-calls.ts), as the hub
 * decided it for the caller's view. Absent: every call goes through the hub's thread.
 */
export interface RunDirect {
  /** New channels to plugin workers (transferred with the message), by key. */
  ports?: { key: number; port: MessagePort; counts: Int32Array }[];
  /** The tools, when they changed since this worker's last run (else the last table holds). */
  table?: DirectTable;
  /** Per plugin of the table: [channel key, the run's grant id], or null: that plugin the slow way. */
  grants: ([number, number] | null)[];
  ctx: PlainContext;
  peer?: PeerWire;
  /** Keep a record of each direct call for the hub's observers: 1 without arguments, 2 with. */
  observe?: 1 | 2;
}

export interface DirectTable {
  /** The plugins' names (for errors) and hard-stop graces (ms), by index. */
  plugins: string[];
  graces: number[];
  /** Tool name: [plugin index, the tool's time limit in ms]. */
  tools: Record<string, [number, number]>;
}

/** Fixed for a worker's life (it pre-creates states with these). */
export interface WorkerSetup {
  memoryBytes: number;
  outputBytes: number;
  resultBytes: number;
  maxCalls: number;
  maxConcurrentCalls: number;
  /** Bytes a run may write in its scratch folder. */
  writeBytes: number;
  /** True when `/source/` is the configured, shared root: writes are refused. */
  sharedRoot: boolean;
  /** Characters of one notice, and notices per second (`execute.message_*`): gated here. */
  messageBytes: number;
  messagesPerSecond: number;
  /** Characters of a tool name an inner call may name (`limits.name_length`): checked here. */
  nameLength: number;
  /** Bytes of compiled scripts (bytecode and text) this worker keeps (`execute.code_cache_bytes`). */
  codeCacheBytes: number;
}

export type ToWorker =
  | {
      type: 'run';
      run: number;
      code: string;
      timeoutMs: number;
      instructions: number;
      /** The folder behind `/source/`: the run's scratch folder, or the configured root. */
      root: string;
      /**
       * The root is the run's scratch folder, not made yet: the worker makes it (0700) when the
       * script first touches `/source/` and says so (`scratch`), so a run without files costs
       * no folder.
       */
      lazy?: boolean;
      /**
       * The tools the caller may see, for mcp.listTools; absent: the same list as this worker's
       * previous run (the hub sends a view's list again only when it changed).
       */
      tools?: string[];
      /**
       * Say `started` when the run starts: the worker was not known to be ready (a fresh one first
       * loads its wasm module), so the hub arms the hard stop only then. A worker that reported
       * `idle` has its state made, and the hub arms the hard stop as it sends the run.
       */
      report: boolean;
      direct?: RunDirect;
    }
  | { type: 'result'; run: number; call: number; result?: ToolResult; error?: string }
  /** The tools changed: the run's grant is revoked, its next calls go through the hub. */
  | { type: 'revoke'; run: number };

export type FromWorker =
  | { type: 'started'; run: number }
  /** The run's scratch folder now exists: the hub removes it when the run ends. */
  | { type: 'scratch'; run: number }
  /**
   * The run's state is closed (its finalizers ran) and the next one is made: ready for a run.
   * Run 0: a new worker's first state is made.
   */
  | { type: 'idle'; run: number }
  | { type: 'call'; run: number; call: number; name: string; args: Record<string, unknown> }
  | { type: 'notice'; run: number; text: string; params: unknown }
  /** A direct call outlived its limit plus grace: the hub stops that plugin's worker hard. */
  | { type: 'overran'; run: number; key: number; tool: string; limitMs: number }
  | {
      type: 'done';
      run: number;
      ok: boolean;
      result?: unknown;
      images?: ContentItem[];
      output: string;
      error?: string;
      /**
       * Direct calls the run left running, per channel: [key, calls sent on it so far, ms until
       * the latest hard deadline of its calls, the tool and limit of the run's last one left]:
       * the hub watches them from now on.
       */
      direct?: [number, number, number, string, number][];
      /** How many of the run's calls went direct (metrics). */
      directCalls?: number;
      /** Those calls one by one, when the run was asked to observe them (inner-observe.ts). */
      directLog?: DirectCallRecord[];
      /** Inner calls refused here for naming a tool past `limits.name_length` (metrics). */
      nameRefusals?: number;
      /** Notices dropped here past `execute.messages_per_second` (metrics). */
      noticeRefusals?: number;
    };
