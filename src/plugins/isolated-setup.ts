/**
 * What an isolated plugin (isolated-plugin.ts) is started from: its options, the record of a call
 * in flight, and the setup message its worker gets first. Apart so the class keeps to the calls.
 */
import type { AsyncResource } from 'node:async_hooks';
import type { MessagePort } from 'node:worker_threads';
import type { Logger } from '../log.js';
import type { SessionViews } from '../lua-api/index.js';
import type { Registry } from '../registry/registry.js';
import type { CallContext } from '../registry/types.js';
import type { PluginSource } from './discover.js';
import type { PluginWorkerSetup, ToWorker } from './worker-protocol.js';
import type { WorkerPool } from './worker-pool.js';

export interface IsolatedPluginOptions {
  registry: Registry;
  source: PluginSource;
  code: Uint8Array;
  chunkname: string;
  logger: Logger;
  memoryLimit?: number;
  loadTimeoutMs: number;
  /** How long past its own limit a call may run before its worker is terminated. */
  graceMs: number;
  sessionViews?: SessionViews;
  settings?: Readonly<Record<string, unknown>>;
  limits?: Readonly<Record<string, number>>;
  /** Told of the plugin's calls its worker refused by a limit (the hub's refusal counter). */
  onRefused?: (limit: string, count: number) => void;
  /** Where workers come from (a spare started ahead makes reloads and restarts fast). */
  pool?: WorkerPool;
  /** Callers' contexts the worker keeps (`plugins.context_table_size`; 0: sent with each call). */
  contextTableSize?: number;
}

export interface Pending {
  resolve: (v: unknown) => void;
  reject: (e: Error) => void;
  /** When the call is stopped hard (performance.now() ms): its limit plus the grace. */
  deadline: number;
  ctx: CallContext;
  /** What runs (a tool call's result may pass on as the JSON text the worker made). */
  kind: Extract<ToWorker, { type: 'invoke' }>['kind'];
  name: string;
  limitMs: number;
  scope: AsyncResource;
}

/** The worker's first message: the plugin to load, its limits and the synchronous channel. */
export function workerSetupOf(
  opts: IsolatedPluginOptions,
  flag: Int32Array,
  syncPort: MessagePort,
): PluginWorkerSetup {
  return {
    source: opts.source,
    code: opts.code,
    chunkname: opts.chunkname,
    hubId: opts.registry.hubId,
    memoryLimit: opts.memoryLimit,
    loadTimeoutMs: opts.loadTimeoutMs,
    logLevel: opts.logger.level,
    sessionViews: opts.sessionViews !== undefined,
    settings: opts.settings,
    limits: opts.limits,
    flag,
    syncPort,
  };
}

/** A call's handler in an error message ("tool 'echo'", "completion 'greet'"). */
export function whatOf(c: Pending): string {
  return `${c.kind.startsWith('complete') ? 'completion' : c.kind} '${c.name}'`;
}

/**
 * Finished calls' contexts, for the tasks that outlive them (a task acts for the call that
 * spawned it): the newest `keep`, the oldest dropped first.
 */
export class FinishedContexts {
  private readonly byId = new Map<number, CallContext>();
  /** The ids in the order they finished (a ring): the oldest goes without a Map iterator. */
  private readonly order: number[] = [];
  private at = 0;

  constructor(private readonly keep: number) {}

  get(id: number): CallContext | undefined {
    return this.byId.get(id);
  }

  add(id: number, ctx: CallContext): void {
    this.byId.set(id, ctx);
    if (this.order.length === this.keep) this.byId.delete(this.order[this.at]!);
    this.order[this.at] = id;
    this.at = (this.at + 1) % this.keep;
  }
}

/** What a message that could not be copied to the worker fails (uncloneable()). */
export interface UncloneableParts {
  contexts: { drop(cx: number): void };
  post(msg: ToWorker): void;
  calls: { get(id: number): Pending | undefined; delete(id: number): unknown };
  callbacks: { uncloneable(id: number, err: Error): void };
}

/** A message that could not be copied to the worker fails what waits on it, not the plugin. */
export function uncloneable(msg: ToWorker, err: Error, parts: UncloneableParts): void {
  // The calls naming it fail in the worker (an unknown caller), later ones define it again.
  if (msg.type === 'context') return parts.contexts.drop(msg.cx);
  if (msg.type === 'answer') {
    parts.post({
      type: 'answer',
      id: msg.id,
      ok: false,
      error: `the answer cannot be passed to the plugin: ${err.message}`,
    });
  } else if (msg.type === 'invoke') {
    const c = parts.calls.get(msg.id);
    if (c === undefined) return;
    parts.calls.delete(msg.id);
    c.reject(new Error(`the call cannot be passed to the plugin: ${err.message}`));
  } else if (msg.type === 'callback') parts.callbacks.uncloneable(msg.id, err);
}
