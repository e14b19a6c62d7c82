/**
 * The hub's side of execute's direct calls, per script worker: the channels it has to plugin
 * workers (one per plugin worker, made on first need and handed to both ends), and each run's
 * grants (made when the run starts, revoked when it ends or the tools change). A channel to a
 * plugin worker that has since been replaced is never used again: a new one is made.
 */
import type { MessagePort } from 'node:worker_threads';
import type { DirectPlugin } from '../plugins/direct-port.js';
import { plainContext } from '../plugins/remote-registry.js';
import type { CallContext } from '../registry/types.js';
import type { DirectPlan } from './direct-plan.js';
import type { RunDirect } from './protocol.js';

interface Channel {
  key: number;
  plugin: DirectPlugin;
  generation: number;
  /** [calls the plugin's side answered, calls the script's side sent] (shared memory). */
  finished: Int32Array;
  /** The plugin's longest tool limit plus grace, as of the last grant. */
  maxWaitMs: number;
}

/** A run's grants, revoked together. */
export type RunGrants = [DirectPlugin, number][];

export class DirectChannels {
  private readonly byPlugin = new Map<DirectPlugin, Channel>();
  private readonly byKey = new Map<number, Channel>();
  private nextKey = 1;
  /** The table this worker holds (sent with an earlier run). */
  private plan: DirectPlan | undefined;

  /**
   * What a run may call directly, its new ports added to `transfer`; the grants go to `grants`.
   * Plugins not serving now (loading, restarting) are left out: their tools go the slow way.
   */
  grant(
    plan: DirectPlan,
    ctx: CallContext,
    grants: RunGrants,
    transfer: MessagePort[],
    observe?: 1 | 2,
  ): RunDirect {
    const out: RunDirect = { grants: [], ctx: plainContext(ctx) };
    if (observe !== undefined) out.observe = observe;
    const peer = ctx.peer;
    if (peer !== undefined) {
      out.peer = { pollLater: typeof peer.pollLater === 'function' };
      if (peer.clientCapabilities !== undefined) out.peer.caps = peer.clientCapabilities;
    }
    if (this.plan !== plan) {
      out.table = plan.table;
      this.plan = plan;
    }
    for (const [i, plugin] of plan.plugins.entries()) {
      let ch = this.byPlugin.get(plugin);
      if (ch === undefined || ch.generation !== plugin.workerGeneration) {
        ch = this.open(plugin, out, transfer);
        if (ch === undefined) {
          out.grants.push(null);
          continue;
        }
      }
      ch.maxWaitMs = plan.maxWaitMs[i]!;
      const id = plugin.grant(ctx);
      grants.push([plugin, id]);
      out.grants.push([ch.key, id]);
    }
    return out;
  }

  private open(plugin: DirectPlugin, out: RunDirect, transfer: MessagePort[]): Channel | undefined {
    // Channels to workers that are gone (restarted, reloaded plugins) are forgotten first.
    for (const [p, c] of this.byPlugin) {
      if (p.workerGeneration === c.generation) continue;
      this.byPlugin.delete(p);
      this.byKey.delete(c.key);
    }
    const opened = plugin.openDirect();
    if (opened === undefined) return undefined;
    const ch: Channel = { key: this.nextKey++, plugin, maxWaitMs: 0, ...opened };
    this.byPlugin.set(plugin, ch);
    this.byKey.set(ch.key, ch);
    (out.ports ??= []).push({ key: ch.key, port: opened.port, counts: opened.finished });
    transfer.push(opened.port);
    return ch;
  }

  /** The script's worker saw a direct call overrun its limit plus grace. */
  overran(key: number, tool: string, limitMs: number): void {
    const ch = this.byKey.get(key);
    ch?.plugin.directOverran(ch.generation, tool, limitMs);
  }

  /**
   * A finished run left direct calls running: unless the plugin has answered all `sent` calls
   * of the channel by the latest hard deadline among them, its worker is stopped hard.
   */
  watchLeft(left: [number, number, number, string, number][]): void {
    for (const [key, sent, waitMs, tool, limitMs] of left) {
      const ch = this.byKey.get(key);
      if (ch === undefined) continue;
      this.watch(ch, sent, waitMs, tool, limitMs);
    }
  }

  /**
   * The script's worker was terminated (a hard stop, a cancelled call) and cannot report what
   * it left running: each channel with calls unanswered gets the plugin's longest limit plus
   * grace to answer them, else its worker is stopped hard.
   */
  abandon(): void {
    for (const ch of this.byKey.values()) {
      const sent = Atomics.load(ch.finished, 1);
      if (Atomics.load(ch.finished, 0) < sent)
        this.watch(ch, sent, ch.maxWaitMs, '(left running by a stopped script)', ch.maxWaitMs);
    }
  }

  private watch(ch: Channel, sent: number, waitMs: number, tool: string, limitMs: number): void {
    const timer = setTimeout(() => {
      if (Atomics.load(ch.finished, 0) < sent)
        ch.plugin.directOverran(ch.generation, tool, limitMs);
    }, waitMs + 1);
    timer.unref();
  }
}

export function revokeAll(grants: RunGrants): void {
  for (const [plugin, id] of grants.splice(0)) plugin.revoke(id);
}
