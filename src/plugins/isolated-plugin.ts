/**
 * One plugin on a worker thread of its own (plugins/plugin-worker.ts), seen from the hub's thread.
 * What the plugin registers is mirrored into the hub's registry, each entry's handler sending the
 * call to the worker. Every call has a hard deadline: its own time limit plus a grace. A call
 * past it means the worker is stuck where no hook reaches (one long C call such as a backtracking
 * pattern match, a `__gc` finalizer, an `xpcall` message handler): the worker is terminated, the
 * call answers with its limit's error, the plugin's other calls in flight fail, and the plugin is
 * started again from the same code, with one log line. The hub's thread never waits on a worker.
 */
import { AsyncResource } from 'node:async_hooks';
import { MessageChannel, type MessagePort, type Worker } from 'node:worker_threads';
import type { Logger } from '../log.js';
import { LuaError } from '../lua/errors.js';
import { DEFAULT_TIMEOUT_MS } from '../lua/state.js';
import { RegistryError } from '../registry/errors.js';
import type { CallContext } from '../registry/types.js';
import type { DirectPlugin } from './direct-port.js';
import { HardStop } from './hard-stop.js';
import { PluginTasks, type RunningTask } from './plugin-tasks.js';
import {
  FinishedContexts,
  uncloneable,
  whatOf,
  workerSetupOf,
  type IsolatedPluginOptions,
  type Pending,
} from './isolated-setup.js';
import { ProxyCallbacks } from './proxy-callbacks.js';
import { IdTable } from '../id-table.js';
import { HubAnswers, endedContext } from './hub-answers.js';
import { SyncQuestions } from './sync-questions.js';
import { newSyncFlag } from './sync-flag.js';
import { MessageBatch, isBundle, type MessageBundle } from './message-batch.js';
import { RegistryMirror } from './mirror.js';
import { ContextTable, DEFAULT_CONTEXT_TABLE_SIZE, callMessage } from './context-table.js';
import type { FromWorker, ToWorker } from './worker-protocol.js';
import { startWorker } from './worker-pool.js';
import { encodeInvoke, invokeExact, markRaw, resultHead, type ResultHead } from './wire.js';

export type { IsolatedPluginOptions } from './isolated-setup.js';
export { WORKER_HEAP_MB } from './worker-pool.js';
/** Finished calls whose view a task they spawned may still act for (bounded). */
const FINISHED_KEPT = 1024;

let nextCall = 1;

export class IsolatedPlugin implements DirectPlugin {
  /** The state's Lua memory as the worker last reported it (after its load and each call). */
  memoryUsed = 0;
  private worker!: Worker;
  /** What goes to the worker, one postMessage per event-loop turn. */
  private outbox!: MessageBatch<ToWorker | string>;
  /** The worker's synchronous questions and its backlog count (closed when it stops serving). */
  private questions!: SyncQuestions;
  /** Not a Map: entries live a call each and hold its request (id-table.ts). */
  private readonly calls = new IdTable<Pending, number>();
  /** Finished calls' callers and views, for tasks that outlive them (oldest dropped first). */
  private readonly finished = new FinishedContexts(FINISHED_KEPT);
  /** What the worker registers, held until it has loaded, then mirrored into the registry. */
  private readonly mirror: RegistryMirror;
  private generation = 0;
  private ready!: Promise<void>;
  private phase: 'loading' | 'ready' | 'retired' | 'closed' | 'dead' = 'loading';
  private activated = false;
  private readonly log: Logger;
  private readonly answers: HubAnswers;
  /** Proxy callbacks sent to the worker. */
  private readonly callbacks = new ProxyCallbacks(
    (msg) => this.post(msg),
    () => DEFAULT_TIMEOUT_MS + this.opts.graceMs,
  );
  /** One timer for the hard stops of all the calls and tasks in flight (hard-stop.ts). */
  private readonly hardStop = new HardStop(() => this.sweep());
  /** The worker's tasks (task.spawn) running, each with its hard deadline. */
  private readonly tasks: PluginTasks;
  /** Fails the generation that is loading (its `ready`); undefined once it has loaded. */
  private failLoad: ((err: Error) => void) | undefined;
  /** Execute runs' contexts by grant id (negative): direct calls act for them (direct-port.ts). */
  private readonly grants = new IdTable<CallContext, number>();
  private nextGrant = -1;
  /** The callers' contexts the worker holds, named by id in each call. */
  private readonly contexts: ContextTable;
  /** A message that cannot be copied to the worker fails what waits on it (isolated-setup.ts). */
  private readonly cannotSend = (msg: ToWorker | string, err: Error): void => {
    const parts = { contexts: this.contexts, calls: this.calls, callbacks: this.callbacks };
    if (typeof msg !== 'string')
      uncloneable(msg, err, { ...parts, post: (m) => this.outbox.post(m) });
  };

  private constructor(private readonly opts: IsolatedPluginOptions) {
    this.log = opts.logger;
    this.tasks = new PluginTasks(opts.graceMs, opts.limits?.taskRestartQuietMs);
    this.contexts = new ContextTable(opts.contextTableSize ?? DEFAULT_CONTEXT_TABLE_SIZE, (msg) =>
      this.outbox.post(msg),
    );
    this.mirror = new RegistryMirror(opts.registry, opts.source.name, this);
    this.answers = new HubAnswers({
      registry: opts.registry,
      owner: opts.source.name,
      logger: opts.logger,
      sessionViews: opts.sessionViews,
      declaredBy: this,
      live: (id) => this.calls.get(id)?.ctx ?? this.grants.get(id),
      inCall: (id, fn) => {
        const scope = id === undefined ? undefined : this.calls.get(id)?.scope;
        return scope === undefined ? fn() : scope.runInAsyncScope(fn);
      },
      finished: (id) => this.finished.get(id),
      // Runs a proxy's Lua callback in the worker, within the default handler limit plus grace.
      callback: (url, which, args) => this.callbacks.call(nextCall++, url, which, args),
    });
  }

  /**
   * Starts the worker and loads the plugin; rejects with the load error. Nothing reaches the
   * registry until activate(), so plugins may load at once and still register in their order.
   */
  static async start(opts: IsolatedPluginOptions): Promise<IsolatedPlugin> {
    const p = new IsolatedPlugin(opts);
    p.spawn(true);
    try {
      await p.ready;
    } catch (err) {
      p.close();
      // The host settles the proxies the failed load declared.
      throw Object.assign(err as Error, { plugin: p });
    }
    return p;
  }

  /** Puts what the plugin registered into the registry (one batch) and lets calls in. */
  activate(): void {
    if (this.activated) return;
    this.activated = true;
    this.mirror.applyHeld();
    this.phase = 'ready';
  }

  get activeCalls(): number {
    return this.calls.size;
  }

  /** The previous generation of a reloaded plugin: closes once its calls in flight end. */
  retire(): void {
    if (this.phase === 'closed') return;
    this.phase = 'retired';
    // What the old generation registers from now on would replace the new one's entries.
    this.mirror.stop();
    if (this.calls.size === 0) return this.close();
    this.post({ type: 'retire' });
  }

  close(): void {
    if (this.phase === 'closed') return;
    this.phase = 'closed';
    this.generation++;
    this.failAll('the plugin was unloaded');
    this.hardStop.clear();
    this.mirror.closeBatches();
    const worker = this.worker;
    this.outbox.post({ type: 'close' });
    this.outbox.flush();
    // Upstream sessions close first; a worker that does not finish is ended anyway.
    const timer = setTimeout(() => void worker.terminate(), 2000);
    timer.unref();
    worker.once('exit', () => clearTimeout(timer));
    this.questions.close();
  }

  // ---- the worker --------------------------------------------------------------------------

  /** `refill`: a (re)load the operator asked for makes the pool's next spare; a restart does not. */
  private spawn(refill: boolean): void {
    const gen = ++this.generation;
    const { port1, port2 } = new MessageChannel();
    const flag = newSyncFlag();
    const setup = workerSetupOf(this.opts, flag, port2);
    const worker = this.opts.pool?.take(refill) ?? startWorker();
    // The setup is the worker's first message (it may have been started ahead, as a spare).
    worker.postMessage({ type: 'setup', setup }, [port2]);
    this.worker = worker;
    this.outbox = new MessageBatch<ToWorker | string>(worker, this.cannotSend);
    this.contexts.clear();
    this.mirror.hold();
    const questions = (this.questions = new SyncQuestions(port1, flag, this.answers));
    this.ready = new Promise<void>((resolve, reject) => {
      const loadLimit = this.opts.loadTimeoutMs + this.opts.graceMs;
      const fail = (this.failLoad = (err: Error) => {
        clearTimeout(timer);
        reject(err);
      });
      const timer = setTimeout(() => {
        if (gen !== this.generation) return;
        this.kill(`the plugin's top level ran longer than its ${this.opts.loadTimeoutMs} ms limit`);
        reject(
          new LuaError(
            `timeout: the plugin's top-level code ran longer than its ${this.opts.loadTimeoutMs} ms limit and was stopped hard`,
          ),
        );
      }, loadLimit + 10_000);
      const handle = (msg: FromWorker) => {
        if (gen !== this.generation) return;
        try {
          if (msg.type === 'loaded') {
            this.memoryUsed = msg.memory ?? 0;
            this.failLoad = undefined;
            clearTimeout(timer);
            if (this.activated) {
              this.mirror.applyHeld();
              if (this.phase === 'loading' || this.phase === 'dead') this.phase = 'ready';
            }
            resolve();
          } else if (msg.type === 'failed') {
            this.failLoad = undefined;
            this.mirror.drop();
            fail(msg.lua ? new LuaError(msg.message) : new Error(msg.message));
          } else this.onMessage(msg);
        } finally {
          questions.handled();
        }
      };
      const receive = (raw: FromWorker | string): void => {
        if (typeof raw !== 'string') return handle(raw);
        const result = resultHead(raw);
        if (result === undefined) return handle(JSON.parse(raw) as FromWorker);
        try {
          if (gen === this.generation) this.settleText(result);
        } finally {
          questions.handled();
        }
      };
      worker.on('message', (raw: FromWorker | MessageBundle<FromWorker | string> | string) => {
        if (typeof raw === 'string' || !isBundle(raw)) return receive(raw);
        for (const m of raw.messages) receive(m);
      });
      worker.on('error', (err) => {
        if (gen !== this.generation) return;
        this.log.error({ err: err.message }, `plugin worker failed: ${err.message}`);
        fail(new Error(`the plugin's worker failed: ${err.message}`));
        this.restart(`its worker failed: ${err.message}`);
      });
      worker.on('exit', () => {
        if (gen !== this.generation || this.phase === 'closed') return;
        fail(new Error("the plugin's worker stopped"));
        this.restart('its worker stopped');
      });
    });
    // A restart's failure is reported by restart(); keep the rejection from going unhandled.
    this.ready.catch(() => undefined);
  }

  /** Terminates the worker (no wait): its calls in flight fail. */
  private kill(reason: string): void {
    this.generation++;
    void this.worker.terminate();
    this.questions.close();
    this.mirror.closeBatches();
    this.tasks.clear();
    this.failAll(`the plugin was restarted: ${reason}`);
  }

  /** A stuck or dead worker: start the plugin again from the same code, one log line. */
  private restart(reason: string): void {
    if (this.phase === 'closed') return;
    if (this.phase === 'retired') return this.close();
    this.kill(reason);
    this.log.error(
      { entry: this.opts.source.entry },
      `plugin restarted: ${reason}; its worker was terminated and the plugin loaded again (its other calls in flight failed)`,
    );
    this.phase = 'loading';
    this.spawn(false);
    this.ready.catch((err: Error) => {
      this.phase = 'dead';
      this.opts.registry.reset(this.opts.source.name);
      this.log.error({ entry: this.opts.source.entry }, `plugin failed to restart: ${err.message}`);
    });
  }

  private failAll(reason: string): void {
    for (const [id, c] of this.calls) {
      this.calls.delete(id);
      c.reject(new Error(reason));
    }
  }

  /** The hard-stop timer fired: stop a call past its deadline, else re-arm for the next one. */
  private sweep(): void {
    const now = performance.now();
    let next = Infinity;
    for (const [id, c] of this.calls) {
      // The restart a hard stop makes fails every other call in flight: one is enough.
      if (c.deadline <= now) return this.overran(id);
      if (c.deadline < next) next = c.deadline;
    }
    const task = this.tasks.check(now);
    if (typeof task !== 'number') return this.taskOverran(task);
    next = Math.min(next, task);
    if (next !== Infinity) this.hardStop.arm(next);
  }

  /**
   * A task ran past its limit plus the grace: the worker is stuck where no hook reaches. While
   * the plugin loads, the load fails; a background task that overruns again soon after the
   * restart it caused stops the plugin (its top level would spawn it at every restart).
   */
  private taskOverran(t: RunningTask): void {
    const o = this.tasks.overrun(t, performance.now());
    if (this.phase === 'loading' && this.failLoad !== undefined) {
      this.kill(o.reason);
      return this.failLoad(new LuaError(o.loadError));
    }
    if (o.restart || this.phase === 'retired') return this.restart(o.reason);
    this.kill(o.reason);
    this.phase = 'dead';
    this.opts.registry.reset(this.opts.source.name);
    this.log.error({ entry: this.opts.source.entry }, o.stopped);
  }

  // ---- direct calls from execute workers (direct-port.ts) ----------------------------------

  get name(): string {
    return this.opts.source.name;
  }

  get graceMs(): number {
    return this.opts.graceMs;
  }

  /** Which worker serves now: a direct channel opened under another generation is dead. */
  get workerGeneration(): number {
    return this.generation;
  }

  /**
   * A channel for an execute worker's direct calls; the plugin's end goes to its worker now.
   * Undefined while the plugin is not serving (loading, restarting, retired): calls go the slow way.
   */
  openDirect(): { port: MessagePort; finished: Int32Array; generation: number } | undefined {
    if (this.phase !== 'ready') return undefined;
    const { port1, port2 } = new MessageChannel();
    // [calls the plugin's side answered, calls the script's side sent]: the hub's hard stop for
    // direct calls whose script is gone reads both (execute/direct-grants.ts).
    const finished = new Int32Array(new SharedArrayBuffer(8));
    // After what is queued: the worker must not see a direct call before its earlier messages.
    this.outbox.flush();
    this.worker.postMessage({ type: 'direct', port: port2, finished }, [port2]);
    port1.unref();
    return { port: port1, finished, generation: this.generation };
  }

  /** Holds a run's context for its direct calls (nested calls, progress act for it). */
  grant(ctx: CallContext): number {
    const id = this.nextGrant--;
    this.grants.set(id, ctx);
    return id;
  }

  /** The run ended or the tools changed: its context goes where finished calls' go. */
  revoke(id: number): void {
    const ctx = this.grants.get(id);
    if (ctx === undefined) return;
    this.grants.delete(id);
    this.remember(id, ctx);
  }

  /** A direct call outlived its limit plus grace: the hard stop, as for a call the hub sent. */
  directOverran(generation: number, tool: string, limitMs: number): void {
    if (generation !== this.generation || this.phase === 'closed') return;
    this.restart(
      `the handler of tool '${tool}' overran its ${limitMs} ms limit by ${this.opts.graceMs} ms`,
    );
  }

  // ---- calls into the plugin ---------------------------------------------------------------

  /** Runs one handler in the worker; `limitMs` is the handler's own time limit. */
  invoke(
    kind: Extract<ToWorker, { type: 'invoke' }>['kind'],
    name: string,
    input: unknown,
    ctx: CallContext,
    limitMs: number | undefined,
    complete?: Extract<ToWorker, { type: 'invoke' }>['complete'],
  ): Promise<unknown> {
    if (this.phase === 'loading') {
      return this.ready.then(() => this.invoke(kind, name, input, ctx, limitMs, complete));
    }
    if (this.phase === 'closed' || this.phase === 'dead') {
      return Promise.reject(new Error(`the plugin '${this.opts.source.name}' is not running`));
    }
    const id = nextCall++;
    const limit = limitMs ?? DEFAULT_TIMEOUT_MS;
    return new Promise((resolve, reject) => {
      const deadline = performance.now() + limit + this.opts.graceMs;
      // The caller's async context, for the nested calls the handler makes (hub-answers.ts).
      const scope = new AsyncResource('moonhub.plugin-call');
      this.calls.set(id, { resolve, reject, deadline, ctx, kind, name, limitMs: limit, scope });
      this.hardStop.arm(deadline);
      // Alone, a call goes at once; with others in flight, it shares the turn's postMessage.
      const now = this.calls.size <= 1;
      const msg = callMessage(this.contexts, id, kind, name, input, ctx, complete);
      this.outbox.post(encodeInvoke(msg, invokeExact(msg)), now);
    });
  }

  private overran(id: number): void {
    const c = this.calls.get(id);
    if (!c) return;
    this.calls.delete(id);
    c.reject(
      new Error(
        `timeout: the handler of ${whatOf(c)} ran longer than its ${c.limitMs} ms limit and was stopped hard (it was stuck in one long library call such as a backtracking pattern match, a __gc finalizer or an xpcall message handler)`,
      ),
    );
    this.restart(
      `the handler of ${whatOf(c)} overran its ${c.limitMs} ms limit by ${this.opts.graceMs} ms`,
    );
  }

  /** `text`: the value's JSON text, when the result came as resultText's message. */
  private settle(
    id: number,
    ok: boolean,
    value: unknown,
    error?: string,
    code?: string,
    text?: string,
  ): void {
    const c = this.calls.get(id);
    if (!c) return;
    this.calls.delete(id);
    this.remember(id, c.ctx);
    // The worker's JSON of an exact tool result: the dispatcher splices it into the answer.
    if (ok && c.kind === 'tool' && text !== undefined) markRaw(value, text);
    if (ok) c.resolve(value);
    else c.reject(code ? new RegistryError(code as never, error ?? '') : new Error(error));
    if (this.phase === 'retired' && this.calls.size === 0) this.close();
  }

  /** A call's result as resultText wrote it: only its value is parsed (and its text kept). */
  private settleText(result: ResultHead): void {
    if (result.memory !== undefined) this.memoryUsed = result.memory;
    this.settle(result.id, true, JSON.parse(result.value), undefined, undefined, result.value);
  }

  private remember(id: number, ctx: CallContext): void {
    this.finished.add(id, endedContext(ctx));
  }

  // ---- what the worker asks ----------------------------------------------------------------

  private onMessage(msg: FromWorker): void {
    switch (msg.type) {
      case 'result':
        if (msg.memory !== undefined) this.memoryUsed = msg.memory;
        return this.settle(msg.id, msg.ok, msg.value, msg.error, msg.code);
      case 'register':
      case 'remove':
      case 'reset':
      case 'batch':
      case 'resource-updated':
        this.mirror.receive(msg);
        return;
      case 'watch': {
        const signal = this.calls.get(msg.id)?.ctx.signal;
        if (!signal) return;
        const abort = () => this.post({ type: 'abort', id: msg.id });
        if (signal.aborted) abort();
        else signal.addEventListener('abort', abort, { once: true });
        return;
      }
      case 'peer': {
        const [level, data, logger] = msg.args as Parameters<
          NonNullable<CallContext['peer']>['log']
        >;
        (this.calls.get(msg.id)?.ctx ?? this.grants.get(msg.id))?.peer?.log(level, data, logger);
        return;
      }
      case 'request': {
        const gen = this.generation;
        return void this.answers.answer(msg).then((a) => gen === this.generation && this.post(a));
      }
      case 'callback-done':
        return this.callbacks.done(msg);
      case 'task':
        return this.hardStop.arm(this.tasks.started(msg.id, msg.ms, msg.background));
      case 'task-end':
        return this.tasks.ended(msg.id);
      case 'refused':
        return this.opts.onRefused?.(msg.limit, msg.count);
    }
  }

  private post(msg: ToWorker): void {
    // Answers to a plugin's nested calls wait for the turn's end, like calls; the rest goes now.
    this.outbox.post(msg, msg.type !== 'answer');
  }
}
