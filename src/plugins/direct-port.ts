/**
 * Direct calls: an `execute` script's worker calling this plugin's tools over a MessagePort of
 * its own, the hub's thread out of each call's path (two thread wake-ups less per call). The hub
 * still decides everything: it hands the port to both sides, puts in a run's grant only the tools
 * the caller's view shows (src/execute/direct-plan.ts), keeps the run's context under the grant's
 * id (nested calls and the client's progress act for it, as for a call it sent itself), revokes
 * the grant when the run ends or the tools change, and stops this worker hard when a direct call
 * overruns its limit (the script's worker watches the deadline, src/execute/direct-calls.ts).
 * Here a call is checked against the tool's schema and run under the tool's own limit, exactly as
 * a call the hub sends (the same Registry.callResolved and handler).
 */
import type { MessagePort } from 'node:worker_threads';
import { failureResult } from '../registry/registry.js';
import { IdTable } from '../id-table.js';
import { attachState, lazyField } from '../registry/lazy-fields.js';
import type { CallContext, CallPeer, ToolResult } from '../registry/types.js';
import { MessageBatch, isBundle, type MessageBundle } from './message-batch.js';
import type { PlainContext } from './worker-protocol.js';
import { decode, encode, jsonExact } from './wire.js';

/** The caller's client as a direct call carries it (its methods are relayed by grant id). */
export interface PeerWire {
  caps?: Record<string, unknown>;
  pollLater: boolean;
}

/** From an execute worker to a plugin worker. */
export type ToPlugin =
  | {
      type: 'call';
      id: number;
      /** The run's grant: the hub holds the run's context under this id (a negative number). */
      grant: number;
      name: string;
      args: Record<string, unknown>;
      ctx: PlainContext;
      peer?: PeerWire;
    }
  /** The run ended (or its grant was revoked): its calls still running here are cancelled. */
  | { type: 'abort'; grant: number };

/** From a plugin worker to an execute worker. */
export interface FromPlugin {
  type: 'result';
  id: number;
  result?: ToolResult;
  /** The call was refused as the hub refuses it (an unknown tool): the script's call raises. */
  error?: string;
}

/** What the plugin worker lends the port: its registry's call, and its hub-side view and peer. */
export interface DirectHost {
  /** Checks `args` against the tool's schema and runs it (Registry.callResolved). */
  call(name: string, args: Record<string, unknown>, ctx: CallContext): Promise<ToolResult>;
  /** The view that makes nested calls ask the hub for the run's view (origin: the grant). */
  view(grant: number): CallContext['filter'];
  peer(grant: number, wire: PeerWire): CallPeer;
}

/** The hub's side of a plugin for direct calls (isolated-plugin.ts). */
export interface DirectPlugin {
  readonly name: string;
  readonly workerGeneration: number;
  /** How long past its limit a call may run before the worker is stopped hard. */
  readonly graceMs: number;
  openDirect(): { port: MessagePort; finished: Int32Array; generation: number } | undefined;
  grant(ctx: CallContext): number;
  revoke(id: number): void;
  directOverran(generation: number, tool: string, limitMs: number): void;
}

/** A direct call running here: its cancellation, and what its context's lazy fields read. */
interface Running {
  grant: number;
  controller: AbortController | undefined;
  host: DirectHost;
  wire: PeerWire | undefined;
  filter: CallContext['filter'];
  peer: CallPeer | undefined;
}

// Shared by every context (lazy-fields.ts): made only when a handler reads them.
const FILTER_FIELD = lazyField((r: Running) => (r.filter ??= r.host.view(r.grant)));
const PEER_FIELD = lazyField((r: Running) => {
  if (r.peer === undefined && r.wire !== undefined) r.peer = r.host.peer(r.grant, r.wire);
  return r.peer;
});
const SIGNAL_FIELD = lazyField((r: Running) => (r.controller ??= new AbortController()).signal);

/** Ports being served, to refuse their calls once the plugin unloads. */
const served = new Set<DirectLink>();
let closedReason: string | undefined;

class DirectLink {
  readonly running = new IdTable<Running, number>();
  private readonly out: MessageBatch<FromPlugin | string>;
  private drained: (() => void) | undefined;

  constructor(
    private readonly port: MessagePort,
    /** How many calls this side has answered, read by the hub's thread for its hard stop. */
    private readonly finished: Int32Array,
    private readonly host: DirectHost,
  ) {
    this.out = new MessageBatch<FromPlugin | string>(port, (msg, err) => {
      // As a call the hub sent: the handler's result that cannot be copied is a tool error.
      if (typeof msg !== 'string')
        this.answer({
          type: 'result',
          id: msg.id,
          result: failureResult(`the result cannot be passed on: ${err.message}`),
        });
    });
    port.on('message', (raw: ToPlugin | string | MessageBundle<ToPlugin | string>) => {
      const msg = decode(raw);
      if (!isBundle(msg)) return this.receive(msg);
      for (const m of msg.messages) this.receive(decode(m));
    });
    // The script's worker ended (a hard stop, a cancelled run): its calls here are cancelled.
    port.on('close', () => {
      served.delete(this);
      for (const r of this.running.values()) r.controller?.abort();
    });
  }

  private receive(msg: ToPlugin): void {
    if (msg.type === 'abort') {
      for (const r of this.running.values()) if (r.grant === msg.grant) r.controller?.abort();
      return;
    }
    if (closedReason !== undefined)
      return this.answer({ type: 'result', id: msg.id, result: failureResult(closedReason) });
    const running: Running = {
      grant: msg.grant,
      controller: undefined,
      host: this.host,
      wire: msg.peer,
      filter: undefined,
      peer: undefined,
    };
    this.running.set(msg.id, running);
    this.host.call(msg.name, msg.args, this.context(msg, running)).then(
      (result) => this.done(msg.id, { type: 'result', id: msg.id, result }),
      (err: unknown) =>
        this.done(msg.id, {
          type: 'result',
          id: msg.id,
          error: err instanceof Error ? err.message : String(err),
        }),
    );
  }

  /** As plugin-worker.ts's contextOf, the origin being the run's grant. */
  private context(msg: Extract<ToPlugin, { type: 'call' }>, running: Running): CallContext {
    const ctx: CallContext = { ...msg.ctx };
    attachState(ctx, running);
    Object.defineProperty(ctx, 'filter', FILTER_FIELD);
    Object.defineProperty(ctx, 'peer', PEER_FIELD);
    Object.defineProperty(ctx, 'signal', SIGNAL_FIELD);
    return ctx;
  }

  private done(id: number, msg: FromPlugin): void {
    if (!this.running.delete(id)) return;
    this.answer(msg);
    if (this.running.size === 0) this.drained?.();
  }

  answer(msg: FromPlugin): void {
    Atomics.add(this.finished, 0, 1);
    // Results wait for the turn's end while other calls run here; the last goes at once.
    this.out.post(encode(msg, jsonExact(msg)), this.running.size === 0);
  }

  /** Resolves once the calls running now have answered. */
  idle(): Promise<void> {
    if (this.running.size === 0) return Promise.resolve();
    return new Promise((resolve) => (this.drained = resolve));
  }
}

/** Serves direct calls arriving on `port` (the hub sent it, see isolated-plugin.ts). */
export function serveDirectPort(port: MessagePort, finished: Int32Array, host: DirectHost): void {
  served.add(new DirectLink(port, finished, host));
}

/**
 * The plugin unloads (a reload retires it): later direct calls are refused with `reason`; the
 * returned promise resolves once the ones running have answered (as the hub's thread lets its
 * own calls in flight finish; the hub ends the worker if that takes longer than its close wait).
 */
export function closeDirectPorts(reason: string): Promise<void> {
  closedReason = reason;
  return Promise.all([...served].map((link) => link.idle())).then(() => undefined);
}
