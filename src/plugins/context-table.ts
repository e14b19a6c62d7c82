/**
 * The callers' contexts a plugin's worker holds, so that a call names its caller's by a small id
 * instead of carrying it (and the worker building it again) every time. An entry is what stays
 * the same across one caller's calls: hub id, session, principal, agent, target, plugin and the
 * client's capabilities; the per-call fields (request id, resource URI) still travel with each
 * call. Entries are keyed by their whole content, so two callers that differ in any field never
 * share one. The table is bounded (least recently used dropped first, and the worker told to drop
 * it too); ids are never reused, so a late message can never name another caller's entry.
 */
import type { CallContext } from '../registry/types.js';
import { capsKey } from './caps-key.js';
import { callerPart, plainContext } from './remote-registry.js';
import type { PeerWire, PlainContext, ToWorker } from './worker-protocol.js';

type Invoke = Extract<ToWorker, { type: 'invoke' }>;

/** Default bound of the entries per plugin worker (`plugins.context_table_size`). */
export const DEFAULT_CONTEXT_TABLE_SIZE = 256;
/**
 * Longest client capabilities (JSON characters) an entry keeps: a client's capabilities are its
 * own to size, and the table must not hold 256 bodies' worth; larger ones travel with the call.
 */
export const MAX_SHARED_CAPS_CHARS = 4096;

/** What a cacheable context holds (per-call fields left out), as sent once to the worker. */
export interface ContextEntry {
  ctx: PlainContext;
  peer?: PeerWire;
}

function capsKeyOf(caps: Record<string, unknown>): string {
  // No capabilities (most 2026-07-28 requests, each with an object of its own): nothing to
  // compare or stringify.
  return isEmpty(caps) ? '{}' : capsKey(caps);
}

function isEmpty(o: object): boolean {
  for (const _ in o) return false;
  return true;
}

/** A field in the key: its length first, so no value can run into the next one. */
function part(v: string | undefined): string {
  return v === undefined ? '-' : v.length + ':' + v;
}

/** The caller's part of a call's message: the peer as data, when the call has a client. */
export function peerWire(ctx: CallContext): PeerWire | undefined {
  const peer = ctx.peer;
  if (peer === undefined) return undefined;
  const out: PeerWire = { pollLater: typeof peer.pollLater === 'function' };
  if (peer.clientCapabilities !== undefined) out.caps = peer.clientCapabilities;
  return out;
}

export class ContextTable {
  /** Key to id, least recently used first. */
  private readonly ids = new Map<string, number>();
  private next = 1;
  /** The most recently used entry (the last of `ids`). */
  private lastKey: string | undefined;
  private lastId: number | undefined;

  /** `send`: posts a message to the worker, in order with the calls. */
  constructor(
    private readonly size: number,
    private readonly send: (msg: ToWorker) => void,
  ) {}

  /**
   * The id of the entry for `ctx` (defined in the worker first when new), or undefined when the
   * context cannot be shared: a Lua caller's own fields, or a table of size 0.
   */
  idOf(ctx: CallContext, peer: PeerWire | undefined): number | undefined {
    if (ctx.fields !== undefined || this.size <= 0) return undefined;
    let key = part(ctx.hub_id) + part(ctx.session_uuid) + part(ctx.principal);
    key += part(ctx.agent_name) + part(ctx.target) + part(ctx.plugin);
    if (peer !== undefined) {
      key += peer.pollLater ? 'P' : 'p';
      if (peer.caps !== undefined) {
        const caps = capsKeyOf(peer.caps);
        if (caps.length > MAX_SHARED_CAPS_CHARS) return undefined;
        key += part(caps);
      } else key += '-';
    }
    // The same caller as the last call (one stdio client, a busy session): already last.
    if (key === this.lastKey) return this.lastId;
    const known = this.ids.get(key);
    if (known !== undefined) {
      // Most recently used last.
      this.ids.delete(key);
      this.ids.set(key, known);
      this.lastKey = key;
      this.lastId = known;
      return known;
    }
    const id = this.next++;
    const entry: ContextEntry = { ctx: callerPart(ctx) };
    if (peer !== undefined) entry.peer = peer;
    this.send({ type: 'context', cx: id, entry });
    this.ids.set(key, id);
    this.lastKey = key;
    this.lastId = id;
    if (this.ids.size > this.size) {
      const [oldKey, oldId] = this.ids.entries().next().value as [string, number];
      this.ids.delete(oldKey);
      this.send({ type: 'forget', cx: oldId });
    }
    return id;
  }

  /** Entry `cx` never reached the worker (its message could not be copied): not to be named. */
  drop(cx: number): void {
    for (const [key, id] of this.ids) if (id === cx) this.ids.delete(key);
    if (this.lastId === cx) this.lastKey = this.lastId = undefined;
  }

  /** A new worker knows no entry. */
  clear(): void {
    this.ids.clear();
    this.lastKey = this.lastId = undefined;
  }

  get entries(): number {
    return this.ids.size;
  }
}

/** A call's message: its caller named by an entry of `table`, or carried whole. */
export function callMessage(
  table: ContextTable,
  id: number,
  kind: Invoke['kind'],
  name: string,
  input: unknown,
  ctx: CallContext,
  complete: Invoke['complete'],
): Invoke {
  const peer = peerWire(ctx);
  const cx = table.idOf(ctx, peer);
  const msg: Invoke = { type: 'invoke', id, kind, name, input };
  // No undefined fields: the message is sent as JSON when JSON carries it exactly (wire.ts).
  if (cx === undefined) {
    msg.ctx = plainContext(ctx);
    if (peer !== undefined) msg.peer = peer;
  } else {
    msg.cx = cx;
    if (ctx.request_id !== undefined) msg.rid = ctx.request_id;
    if (ctx.uri !== undefined) msg.uri = ctx.uri;
  }
  if (complete !== undefined) msg.complete = complete;
  return msg;
}
