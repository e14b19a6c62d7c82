/**
 * Passing the upstream's messages to the agent whose call caused them: log messages, and the
 * upstream's requests for sampling, elicitation and roots. The SDK client gives progress and
 * cancellation their own per-request ids and tokens (`onprogress`, `signal`), so those are mapped
 * where the request is made; here the upstream's requests go to a calling agent's `CallPeer`.
 *
 * Which agent: the upstream does not say which of our requests a message belongs to (stdio and
 * standalone streams carry no such link), so it goes to the most recent call in flight whose
 * client declared the capability. With one call in flight, that is exact.
 */
import type { Client } from '@modelcontextprotocol/client';
import { SlotTable } from '../slot-table.js';
import type { CallPeer, LogLevel } from '../registry/types.js';

/** A call in flight; its peer is read only when a message needs it (a CallContext's `peer` is a getter that builds one). */
interface Active {
  readonly peer?: CallPeer;
}

const CAPABILITY: Record<string, string> = {
  'sampling/createMessage': 'sampling',
  'elicitation/create': 'elicitation',
  'roots/list': 'roots',
};

export class UpstreamRelay {
  /**
   * Calls in flight. Not a Set: its entries hold their requests and come and go at the call rate,
   * and a Set's replaced tables pinned them (slot-table.ts). `order` holds each slot's arrival.
   */
  private readonly active = new SlotTable<Active>();
  private readonly order: number[] = [];
  private arrivals = 0;
  private readonly onLog: ((level: string, data: unknown, logger?: string) => void) | undefined;

  constructor(onLog?: (level: string, data: unknown, logger?: string) => void) {
    this.onLog = onLog;
  }

  /** Marks a call in flight for `from.peer`; `untrack` with what it returns ends it. */
  track(from: Active): number {
    const slot = this.active.add(from);
    this.order[slot] = ++this.arrivals;
    return slot;
  }

  /** The peers of the calls in flight, oldest call first (read only when a message comes). */
  private peers(): CallPeer[] {
    const order = this.order;
    const calls = [...this.active.entries()].sort((a, b) => order[a[0]]! - order[b[0]]!);
    const out: CallPeer[] = [];
    for (const [, a] of calls) {
      const peer = a.peer;
      if (peer !== undefined) out.push(peer);
    }
    return out;
  }

  /** Ends the call `track` gave `slot` for. */
  untrack(slot: number, from: Active): void {
    this.active.delete(slot, from);
  }

  private pick(capability?: string): CallPeer | undefined {
    const peers = this.peers().reverse();
    if (!capability) return peers[0];
    return peers.find((p) => p.clientCapabilities?.[capability] !== undefined);
  }

  /** Installs the handlers on a freshly made client (before it connects). */
  attach(client: Client, declared: Record<string, unknown>): void {
    client.setNotificationHandler('notifications/message', (n) => {
      const params = n.params as { level: LogLevel; data: unknown; logger?: string };
      const peers = this.peers();
      if (peers.length === 0) this.onLog?.(params.level, params.data, params.logger);
      for (const p of new Set(peers)) p.log(params.level, params.data, params.logger);
    });
    for (const [method, capability] of Object.entries(CAPABILITY)) {
      if (declared[capability] === undefined) continue;
      const forward = async (request: { params?: unknown }) => {
        const peer = this.pick(capability);
        if (!peer)
          throw new Error(`no calling client can answer ${method}: none declared ${capability}`);
        const params = { ...((request.params ?? {}) as Record<string, unknown>) };
        // The upstream's own progress token and meta mean nothing to our client.
        delete params._meta;
        return peer.request(method, params);
      };
      (
        client.setRequestHandler as unknown as (
          m: string,
          h: (r: { params?: unknown }) => Promise<Record<string, unknown>>,
        ) => void
      )(method, forward);
    }
  }
}
