/**
 * In an execute worker: inner calls to plugin tools the hub granted the run, sent straight to the
 * plugin's worker over a MessagePort (src/plugins/direct-port.ts) instead of through the hub's
 * thread. What the hub decides stays the hub's: the grant holds only tools of the caller's view
 * (the table), the hub revokes it when the tools change (`revoke`) and when the run ends, and a
 * call past its limit plus grace is reported (`overran`) so the hub stops the plugin's worker
 * hard, as for a call it sent. Anything not granted, or a channel that closed, goes the slow way.
 */
import type { MessagePort } from 'node:worker_threads';
import type { FromPlugin, PeerWire, ToPlugin } from '../plugins/direct-port.js';
import { MessageBatch, isBundle, type MessageBundle } from '../plugins/message-batch.js';
import { decode, encode, jsonExact } from '../plugins/wire.js';
import type { PlainContext } from '../plugins/worker-protocol.js';
import type { ToolResult } from '../registry/types.js';
import { ERROR_TEXT_MAX, outcomeOfResult, type DirectCallRecord } from './inner-observe.js';
import type { DirectTable, FromWorker, RunDirect } from './protocol.js';

interface Pending {
  run: number;
  tool: string;
  limitMs: number;
  deadline: number;
  resolve: (r: ToolResult) => void;
  reject: (e: Error) => void;
  /** Observed runs: records the call as cut short by the run's end. */
  cut?: () => void;
}

interface Link {
  key: number;
  out: MessageBatch<ToPlugin | string>;
  pending: Map<number, Pending>;
  /** [answered by the plugin, sent from here] on this channel, ever (read by the hub). */
  counts: Int32Array;
  /** The latest hard deadline of any call sent on it (an earlier run's may still run). */
  latest: number;
  dead: boolean;
}

interface RunGrant {
  id: number;
  grants: ([number, number] | null)[];
  ctx: PlainContext;
  peer: PeerWire | undefined;
  /** Record each call for the hub's observers: 1 without the arguments, 2 with them. */
  observe: 0 | 1 | 2;
}

/** A tool error the script sees as the hub's path would give it (an `isError` result). */
function failure(text: string): ToolResult {
  return { content: [{ type: 'text', text }], isError: true };
}

export class DirectCalls {
  private readonly links = new Map<number, Link>();
  private table: DirectTable | undefined;
  private run: RunGrant | undefined;
  private nextId = 1;
  /** Direct calls of the current run (its answer says how many, for the metrics). */
  made = 0;
  /** The current run's calls as the hub's observers see them (inner-observe.ts), when asked. */
  records: DirectCallRecord[] = [];
  private watchdog: NodeJS.Timeout | undefined;
  private armedFor = Infinity;

  constructor(private readonly post: (msg: FromWorker) => void) {}

  /** A run starts with what the hub granted it (nothing: every call the slow way). */
  begin(run: number, direct: RunDirect | undefined): void {
    this.made = 0;
    this.records = [];
    if (direct === undefined) return void (this.run = undefined);
    if (direct.table !== undefined) this.table = direct.table;
    for (const { key, port, counts } of direct.ports ?? []) this.open(key, port, counts);
    this.run = {
      id: run,
      grants: direct.grants,
      ctx: direct.ctx,
      peer: direct.peer,
      observe: direct.observe ?? 0,
    };
  }

  /** The hub revoked the run's grant: the run's next calls go through the hub. */
  revoke(run: number): void {
    if (this.run?.id === run) this.run = undefined;
  }

  /** A direct call, or undefined when this one must go through the hub. */
  call(name: string, args: Record<string, unknown>): Promise<ToolResult> | undefined {
    const run = this.run;
    const t = run === undefined ? undefined : this.table?.tools[name];
    if (run === undefined || t === undefined || !Object.hasOwn(this.table!.tools, name)) return;
    const grant = run.grants[t[0]];
    const link = grant ? this.links.get(grant[0]) : undefined;
    if (!grant || link === undefined || link.dead) return;
    return new Promise<ToolResult>((resolve, reject) => {
      const id = this.nextId++;
      const limitMs = t[1];
      const deadline = performance.now() + limitMs + this.table!.graces[t[0]]!;
      const p: Pending = { run: run.id, tool: name, limitMs, deadline, resolve, reject };
      if (run.observe !== 0) this.observed(p, run.observe === 2 ? args : undefined);
      link.pending.set(id, p);
      Atomics.add(link.counts, 1, 1);
      if (deadline > link.latest) link.latest = deadline;
      this.made++;
      const msg: ToPlugin = { type: 'call', id, grant: grant[1], name, args, ctx: run.ctx };
      if (run.peer !== undefined) msg.peer = run.peer;
      // The calls of one turn (mcp.call x3, then task.await) go in one postMessage.
      link.out.post(encode(msg, jsonExact(msg)));
      this.arm(deadline);
    });
  }

  /**
   * The run ended: its calls still running are cancelled in the plugin and forgotten here; the
   * hub gets what it needs to keep their hard stop.
   */
  end(run: number): [number, number, number, string, number][] | undefined {
    const grant = this.run?.id === run ? this.run : undefined;
    this.run = undefined;
    let left: [number, number, number, string, number][] | undefined;
    const now = performance.now();
    for (const link of this.links.values()) {
      let last: Pending | undefined;
      for (const [id, p] of link.pending) {
        if (p.run !== run) continue;
        link.pending.delete(id);
        p.cut?.();
        if (last === undefined || p.deadline > last.deadline) last = p;
      }
      if (last === undefined) continue;
      const g = grant?.grants.find((x) => x?.[0] === link.key);
      if (g) link.out.post(JSON.stringify({ type: 'abort', grant: g[1] } satisfies ToPlugin), true);
      (left ??= []).push([
        link.key,
        Atomics.load(link.counts, 1),
        Math.max(0, link.latest - now),
        last.tool,
        last.limitMs,
      ]);
    }
    return left;
  }

  /** Makes `p`'s settling (and its cutting short) leave a record of the call. */
  private observed(p: Pending, args: Record<string, unknown> | undefined): void {
    const t0 = performance.now();
    const at = Date.now();
    const { resolve, reject, tool } = p;
    const records = this.records;
    const note = (outcome: DirectCallRecord[3], text: string | undefined) =>
      records.push([tool, at, performance.now() - t0, outcome, text, args]);
    p.resolve = (r) => {
      note(...outcomeOfResult(r));
      resolve(r);
    };
    p.reject = (e) => {
      note('error', e.message.slice(0, ERROR_TEXT_MAX));
      reject(e);
    };
    p.cut = () => note('error', 'the script ended before the call answered');
  }

  private open(key: number, port: MessagePort, counts: Int32Array): void {
    const link: Link = {
      key,
      out: new MessageBatch<ToPlugin | string>(port, (msg) => this.uncloneable(link, msg)),
      pending: new Map(),
      counts,
      latest: 0,
      dead: false,
    };
    this.links.set(key, link);
    port.on('message', (raw: FromPlugin | string | MessageBundle<FromPlugin | string>) => {
      const msg = decode(raw);
      if (!isBundle(msg)) return this.answered(link, msg);
      for (const m of msg.messages) this.answered(link, decode(m));
    });
    // The plugin's worker ended (restarted, reloaded, unloaded): its calls fail clearly, and the
    // next ones go through the hub (which knows the new worker).
    port.on('close', () => {
      link.dead = true;
      this.links.delete(key);
      for (const p of link.pending.values())
        p.resolve(
          failure(`the plugin of tool '${p.tool}' was restarted or unloaded while the call ran`),
        );
      link.pending.clear();
    });
    port.unref();
  }

  private answered(link: Link, msg: FromPlugin): void {
    const p = link.pending.get(msg.id);
    if (p === undefined) return;
    link.pending.delete(msg.id);
    if (msg.result !== undefined) p.resolve(msg.result);
    else p.reject(new Error(msg.error ?? 'the call failed'));
  }

  private uncloneable(link: Link, msg: ToPlugin | string): void {
    if (typeof msg === 'string' || msg.type !== 'call') return;
    const p = link.pending.get(msg.id);
    link.pending.delete(msg.id);
    // Never reached the plugin: not one the hub's hard stop waits for.
    Atomics.sub(link.counts, 1, 1);
    p?.reject(new Error(`the arguments of '${msg.name}' cannot be passed on: could not be cloned`));
  }

  /** One timer for every direct call in flight, armed for the earliest deadline. */
  private arm(deadline: number): void {
    if (deadline >= this.armedFor) return;
    if (this.watchdog !== undefined) clearTimeout(this.watchdog);
    this.armedFor = deadline;
    this.watchdog = setTimeout(() => this.sweep(), Math.max(0, deadline - performance.now()));
    this.watchdog.unref();
  }

  private sweep(): void {
    this.watchdog = undefined;
    this.armedFor = Infinity;
    const now = performance.now();
    let next = Infinity;
    for (const link of this.links.values()) {
      for (const [id, p] of link.pending) {
        if (p.deadline > now) {
          next = Math.min(next, p.deadline);
          continue;
        }
        // The worker is stuck where no hook reaches: the hub restarts it (its port then closes
        // and fails the channel's other calls); this call answers with its limit's error.
        link.pending.delete(id);
        link.dead = true;
        p.resolve(
          failure(
            `timeout: the handler of tool '${p.tool}' ran longer than its ${p.limitMs} ms limit and was stopped hard (it was stuck in one long library call such as a backtracking pattern match, a __gc finalizer or an xpcall message handler)`,
          ),
        );
        this.post({ type: 'overran', run: p.run, key: link.key, tool: p.tool, limitMs: p.limitMs });
      }
    }
    if (next !== Infinity) this.arm(next);
  }
}
