/**
 * What a plugin's worker thread learns from the hub after it started (plugins/worker-boot.ts):
 * its setup, and the messages that came before the plugin's runtime listened. A worker may be
 * started ahead of need (the host's spare, plugins/worker-pool.ts), so the setup cannot travel
 * in `workerData`; it is the first message on the worker's port.
 */
import type { PluginWorkerSetup, ToWorker } from './worker-protocol.js';
import type { MessageBundle } from './message-batch.js';

/** A message, its JSON (plugins/wire.ts), or a turn's bundle of them. */
type Inbound = ToWorker | string | MessageBundle<ToWorker | string>;

/** The setup the hub sent; read by plugins/plugin-worker.ts, which is imported only after it. */
export let setup: PluginWorkerSetup;
let handler: ((msg: Inbound) => void) | undefined;
/** Messages that arrived between the setup and the runtime's listener (kept in order). */
const early: Inbound[] = [];

export function provideSetup(s: PluginWorkerSetup): void {
  setup = s;
}

/** The runtime's listener: gets what arrived before it, then every message. */
export function onHubMessage(fn: (msg: Inbound) => void): void {
  handler = fn;
  for (const m of early.splice(0)) fn(m);
}

export function deliver(msg: Inbound): void {
  if (handler) handler(msg);
  else early.push(msg);
}
