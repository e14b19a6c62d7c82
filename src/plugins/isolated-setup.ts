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
