import { DEFAULT_NAME_LENGTH, type RefusalReport } from '../lua-api/inner-refusals.js';

/**
 * The limits and sizes of the `execute` tool. Every key is optional; the config file (another
 * module) passes an object of these. Breaking a limit ends that run with an error naming it.
 */
export interface ExecuteOptions {
  /** false leaves the `execute` tool out; `search_tools` stays (default true). */
  enabled?: boolean;
  /** Wall time of a run when the call gives no `timeout_ms` (default 30000). */
  timeoutMs?: number;
  /** The largest `timeout_ms` a call may ask for (default 300000). */
  maxTimeoutMs?: number;
  /** Lua VM instructions one run may execute (default 500 million). */
  instructions?: number;
  /** Memory ceiling of a run's Lua state, in bytes (default 64 MiB). */
  memoryBytes?: number;
  /** Bytes a run may print (default 1 MiB). */
  outputBytes?: number;
  /** Bytes of the JSON of a run's return value (default 8 MiB). */
  resultBytes?: number;
  /** Tool calls (and spawned tasks) one run may start (default 1000). */
  maxCalls?: number;
  /** Tool calls of one run in flight at once (default 32). */
  maxConcurrentCalls?: number;
  /** Scripts that run at once, each in a worker thread of its own (default 2). */
  workers?: number;
  /** Runs that may wait for a free worker before a call is turned away (default 64). */
  maxQueued?: number;
  /**
   * A folder behind `/source/` in every script, read-only. Absent (the default): each run gets a
   * fresh, empty scratch folder of its own, removed when the run ends; never the hub's folder.
   */
  root?: string;
  /** Bytes a run may write under its scratch `/source/tmp/` (default 16 MiB). */
  writeBytes?: number;
  /** Characters of one notice (default 16384). */
  messageBytes?: number;
  /** Notices per second of one run; more are dropped and counted (default 200). */
  messagesPerSecond?: number;
  /**
   * Bytes of compiled scripts each worker keeps, bytecode and text, so a script sent again skips
   * its compile (default 1 MiB; 0: none kept).
   */
  codeCacheBytes?: number;
  /** Characters of a `search_tools` query (default 1000). */
  searchQueryChars?: number;
  /** Different words in a `search_tools` query (default 16): each is looked for in every tool. */
  searchQueryWords?: number;
  /**
   * After the wall time, how long the worker may take to report its own timeout before it is
   * terminated (the hard stop for a script stuck in one long library call; default 200 ms).
   */
  graceMs?: number;
  /**
   * After a run has answered, how long its worker may take to close the run's state (the state's
   * `__gc` finalizers run then, with no hook) and make the next one before it is terminated and
   * replaced, so no run can leave a worker busy (default 1000 ms).
   */
  cleanupMs?: number;
  /**
   * Characters of the tool name an inner call may name: the front door's `limits.name_length`
   * (default 256), so a script cannot carry a name the client's own tools/call could not.
   */
  nameLength?: number;
  /**
   * The client's per-tool rate limits (`limits.rate.tool`, `limits.rate.tools`), applied to every
   * inner call as to a client's own tools/call: a script cannot call a limited tool faster than
   * its caller could. Absent: no tool is limited.
   */
  innerRate?: InnerRateGate;
  /**
   * Told of inner calls refused by a limit (`name_length`): the hub's refusal counter
   * (`moonhub_limit_refusals_total`). Absent: not counted.
   */
  onRefused?: RefusalReport;
}

/** Per-(principal, tool) rate limits, as the server layer keeps them (a structural type). */
export interface InnerRateGate {
  /** True when some rule limits `tool` (its inner calls then stay on the hub's path). */
  limits(tool: string): boolean;
  /** Takes a token of (`principal`, `tool`): the refusal, or undefined when allowed. */
  take(
    principal: string | undefined,
    tool: string,
  ): { limit: string; retryAfterMs: number } | undefined;
}

export type ResolvedExecuteOptions = Required<
  Omit<ExecuteOptions, 'root' | 'innerRate' | 'onRefused'>
> & {
  root: string | undefined;
  innerRate: InnerRateGate | undefined;
  onRefused: RefusalReport | undefined;
};

/**
 * An inner call naming a tool past `limits.name_length` is refused with the front door's error
 * (lua-api/inner-refusals.ts, shared with plugins' inner calls).
 */
export { innerNameRefusal } from '../lua-api/inner-refusals.js';

export function resolveExecuteOptions(o: ExecuteOptions = {}): ResolvedExecuteOptions {
  return {
    enabled: o.enabled ?? true,
    timeoutMs: o.timeoutMs ?? 30_000,
    maxTimeoutMs: o.maxTimeoutMs ?? 300_000,
    instructions: o.instructions ?? 500_000_000,
    memoryBytes: o.memoryBytes ?? 64 * 1024 * 1024,
    outputBytes: o.outputBytes ?? 1024 * 1024,
    resultBytes: o.resultBytes ?? 8 * 1024 * 1024,
    maxCalls: o.maxCalls ?? 1000,
    maxConcurrentCalls: o.maxConcurrentCalls ?? 32,
    workers: o.workers ?? 2,
    maxQueued: o.maxQueued ?? 64,
    root: o.root,
    writeBytes: o.writeBytes ?? 16 * 1024 * 1024,
    messageBytes: o.messageBytes ?? 16 * 1024,
    messagesPerSecond: o.messagesPerSecond ?? 200,
    codeCacheBytes: o.codeCacheBytes ?? 1024 * 1024,
    searchQueryChars: o.searchQueryChars ?? 1000,
    searchQueryWords: o.searchQueryWords ?? 16,
    graceMs: o.graceMs ?? 200,
    cleanupMs: o.cleanupMs ?? 1000,
    nameLength: o.nameLength ?? DEFAULT_NAME_LENGTH,
    innerRate: o.innerRate,
    onRefused: o.onRefused,
  };
}
