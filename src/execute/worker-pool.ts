/**
 * The worker threads that run execute scripts, one run per worker at a time. Inner tool calls
 * arrive as messages and are made here, on the hub's thread, through the run's ToolCaller. A run
 * past its wall time (plus a short grace for the worker to report it itself) gets a hard stop:
 * the worker is terminated and replaced, and the hub never waits on a stuck script.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { MessagePort } from 'node:worker_threads';
import type { Logger } from '../log.js';
import type { ToolCaller } from '../lua-api/tool-caller.js';
import type { DirectPlan } from './direct-plan.js';
import { revokeAll } from './direct-grants.js';
import { FairQueue } from './fair-queue.js';
import type { ResolvedExecuteOptions } from './options.js';
import type { FromWorker, ToWorker, WorkerSetup } from './protocol.js';
import {
  failed,
  outcomeOf,
  relayCall,
  spawnSlot,
  type ScriptOutcome,
  type Slot,
} from './script-slot.js';

export interface ScriptJob {
  code: string;
  timeoutMs: number;
  caller: ToolCaller;
  /** The names the caller may see (mcp.listTools); one array per view and registry version. */
  tools: string[];
  /** Which of them the run may call directly on their plugin's worker (direct-plan.ts). */
  direct?: DirectPlan;
  signal?: AbortSignal;
  /** Whose run it is: the queue is shared fairly by principal (fair-queue.ts). */
  principal?: string;
  /** Record each direct call for the observers (inner-observe.ts): 1 without arguments, 2 with. */
  observe?: 1 | 2;
}

/** What metrics and the dashboard read of the pool. */
export interface ExecuteStats {
  running: number;
  queued: number;
  workers: number;
  /** Inner tool calls made so far: straight to a plugin worker, or through the hub's thread. */
  innerCalls: { direct: number; hub: number };
}

export type { ScriptOutcome } from './script-slot.js';

/** A run waiting for a worker. */
interface Waiting {
  start: (slot: Slot) => void;
  resolve: (o: ScriptOutcome) => void;
  /** Answers the run `execute is busy` (the queue is full, or it gave its place up). */
  refuse: () => void;
  /** Drops its cancel listener once it left the queue. */
  unlisten?: () => void;
}

/** How long a worker may take to load its Lua module and start a run. */
const START_LIMIT_MS = 30_000;

export class ScriptPool {
  private readonly slots: Slot[] = [];
  private readonly queue: FairQueue<Waiting>;
  private nextRun = 1;
  /** Inner calls made so far, by path (metrics: moonhub_execute_inner_calls_total). */
  private readonly innerCalls = { direct: 0, hub: 0 };
  private closed = false;
  private readonly setup: WorkerSetup;
  /** The private (0700) folder holding the runs' scratch folders, made on the first run. */
  private scratchParent: string | undefined;

  constructor(
    private readonly opts: ResolvedExecuteOptions,
    private readonly logger?: Logger,
  ) {
    this.queue = new FairQueue(opts.maxQueued);
    this.setup = {
      memoryBytes: opts.memoryBytes,
      outputBytes: opts.outputBytes,
      resultBytes: opts.resultBytes,
      maxCalls: opts.maxCalls,
      maxConcurrentCalls: opts.maxConcurrentCalls,
      writeBytes: opts.writeBytes,
      sharedRoot: opts.root !== undefined,
      messageBytes: opts.messageBytes,
      messagesPerSecond: opts.messagesPerSecond,
      nameLength: opts.nameLength,
      codeCacheBytes: opts.codeCacheBytes,
    };
  }

  /** Runs a script; never rejects (every failure is an outcome naming it). */
  run(job: ScriptJob): Promise<ScriptOutcome> {
    if (this.closed) return Promise.resolve(failed('the hub is shutting down'));
    return new Promise<ScriptOutcome>((resolve) => {
      const start = (slot: Slot) => this.start(slot, job, resolve);
      const free = this.slots.find((s) => s.job === undefined && s.cleaning === undefined);
      if (free) return start(free);
      if (this.slots.length < this.opts.workers) return start(this.spawn());
      const waiting: Waiting = { start, resolve, refuse: () => resolve(this.busy()) };
      const { queued, evicted } = this.queue.push(job.principal, waiting);
      // The newest run of the principal holding the most gave its place up to this one.
      if (evicted !== undefined) {
        evicted.unlisten?.();
        evicted.refuse();
      }
      if (queued === undefined) return waiting.refuse();
      const signal = job.signal;
      if (signal === undefined) return;
      const onAbort = () => {
        if (this.queue.remove(queued)) resolve(failed('the call was cancelled'));
      };
      signal.addEventListener('abort', onAbort, { once: true });
      // Started or refused: the listener must not keep the entry (and its run) alive.
      waiting.unlisten = () => signal.removeEventListener('abort', onAbort);
    });
  }

  /** The refusal of a run the queue has no place for, counted as the hub's refusals are. */
  private busy(): ScriptOutcome {
    this.opts.onRefused?.('execute_queue', 1);
    return failed(
      `execute is busy: ${this.opts.workers} scripts are running and ${this.queue.size} are waiting (execute.max_queued, shared fairly between principals); try again later`,
    );
  }

  /** The tools changed: every run's direct grant is revoked (its next calls go the slow way). */
  revokeDirect(): void {
    for (const slot of this.slots) {
      const job = slot.job;
      if (job === undefined || job.grants.length === 0) continue;
      revokeAll(job.grants);
      slot.outbox.post({ type: 'revoke', run: job.run }, true);
    }
  }

  /** Scripts running and waiting now, and the workers (metrics, the dashboard). */
  stats(): ExecuteStats {
    return {
      running: this.slots.filter((s) => s.job !== undefined).length,
      queued: this.queue.size,
      workers: this.slots.length,
      innerCalls: { ...this.innerCalls },
    };
  }

  /** Starts one worker ahead of the first run, so that run does not wait for a module load. */
  warm(): void {
    if (!this.closed && this.slots.length === 0) this.spawn();
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const q of this.queue.drain()) q.resolve(failed('the hub is shutting down'));
    await Promise.allSettled(this.slots.map((s) => s.worker.terminate()));
    // Runs cut short by the shutdown: their scratch folders go too.
    for (const s of this.slots) s.job?.finish(failed('the hub is shutting down'));
    this.slots.length = 0;
    if (this.scratchParent !== undefined)
      rmSync(this.scratchParent, { recursive: true, force: true });
  }

  private spawn(): Slot {
    const slot = spawnSlot(this.setup, {
      message: (m) => this.onMessage(slot, m),
      exit: (reason) => this.onExit(slot, reason),
    });
    this.slots.push(slot);
    return slot;
  }

  private start(slot: Slot, job: ScriptJob, resolve: (o: ScriptOutcome) => void): void {
    const run = this.nextRun++;
    let timer: NodeJS.Timeout | undefined;
    let onAbort: (() => void) | undefined;
    // A fresh folder per run unless a shared read-only root is configured: a script never sees
    // the hub's working directory, data folder, config or a plugin's files. Only named here:
    // the worker makes it when the script first touches /source/ (most scripts never do).
    const scratch =
      this.opts.root === undefined
        ? join((this.scratchParent ??= mkdtempSync(join(tmpdir(), 'moonhub-execute-'))), `${run}`)
        : undefined;
    const finish = (outcome: ScriptOutcome) => {
      if (slot.job?.run !== run) return;
      slot.toolOf.clear();
      revokeAll(slot.job.grants);
      // A run cut short may have made its folder without having said so yet: remove it anyway.
      const made = slot.job.scratchMade || !outcome.ok;
      slot.job = undefined;
      if (scratch !== undefined && made)
        void rm(scratch, { recursive: true, force: true }).catch(() => undefined);
      clearTimeout(timer);
      if (onAbort) job.signal?.removeEventListener('abort', onAbort);
      resolve(outcome);
      // The worker now closes the run's state; it takes new work once it says it is idle.
      if (this.slots.includes(slot) && slot.cleaning === undefined) this.awaitIdle(slot, run);
    };
    // The hard stop, armed when the worker starts the run (a fresh worker first loads its wasm
    // module): a run that has not reported by its deadline plus grace is stuck in C.
    const started = () => {
      clearTimeout(timer);
      timer = setTimeout(
        () =>
          this.kill(
            slot,
            `timeout: the script ran longer than its ${job.timeoutMs} ms limit and was stopped hard (it was stuck in one long library call, such as a backtracking pattern match)`,
          ),
        job.timeoutMs + this.opts.graceMs,
      );
    };
    slot.job = {
      run,
      finish,
      caller: job.caller,
      started,
      scratchMade: false,
      pending: 0,
      grants: [],
    };
    // A worker with its state made starts the run as it reads it: the hard stop is armed now,
    // and the worker need not say `started` (one message less per run).
    const report = !slot.prepared;
    if (report) {
      timer = setTimeout(
        () => this.kill(slot, `the script's worker did not start within ${START_LIMIT_MS} ms`),
        START_LIMIT_MS,
      );
    } else started();
    slot.prepared = false;
    slot.lastRun = run;
    if (job.signal) {
      onAbort = () => this.kill(slot, 'the call was cancelled');
      if (job.signal.aborted) return onAbort();
      job.signal.addEventListener('abort', onAbort, { once: true });
    }
    const msg: Extract<ToWorker, { type: 'run' }> = {
      type: 'run',
      run,
      code: job.code,
      timeoutMs: job.timeoutMs,
      instructions: this.opts.instructions,
      root: (this.opts.root ?? scratch) as string,
      lazy: scratch !== undefined,
      report,
    };
    if (slot.tools !== job.tools) {
      msg.tools = job.tools;
      slot.tools = job.tools;
    }
    const ctx = job.caller.context;
    if (job.direct !== undefined && ctx !== undefined) {
      const transfer: MessagePort[] = [];
      msg.direct = slot.direct.grant(job.direct, ctx, slot.job.grants, transfer, job.observe);
      if (transfer.length > 0) {
        // Ports are transferred, which the turn's batch does not do: what is queued goes first.
        slot.outbox.flush();
        return slot.worker.postMessage(msg, transfer);
      }
    }
    slot.outbox.post(msg, true);
  }

  /**
   * A run's answer is out; its worker must close the state (finalizers, which no hook stops)
   * and report idle within cleanupMs, or it is replaced: no run can leave a worker busy.
   */
  private awaitIdle(slot: Slot, run: number): void {
    const timer = setTimeout(() => {
      this.logger?.warn(
        { run, cleanup_ms: this.opts.cleanupMs },
        `execute: a finished script's worker did not become idle within ${this.opts.cleanupMs} ms (a __gc finalizer that does not return?); the worker was terminated and replaced`,
      );
      this.kill(slot, 'the worker was replaced');
      if (!this.closed && this.slots.length < this.opts.workers) this.spawn();
    }, this.opts.cleanupMs);
    slot.cleaning = { run, timer };
  }

  /** Ends the slot's run with `reason` and replaces its worker. */
  private kill(slot: Slot, reason: string): void {
    if (slot.cleaning) clearTimeout(slot.cleaning.timer);
    slot.cleaning = undefined;
    const job = slot.job;
    const i = this.slots.indexOf(slot);
    if (i >= 0) this.slots.splice(i, 1);
    slot.worker.removeAllListeners('exit');
    slot.worker.removeAllListeners('error');
    slot.worker.on('error', () => undefined);
    void slot.worker.terminate();
    // Its direct calls still running in plugins are watched from here now.
    slot.direct.abandon();
    job?.finish(failed(reason));
    // The finish above handed the queue to nothing (the slot is gone): start a new worker for it.
    if (this.queue.size > 0 && !this.closed) this.next(this.spawn());
  }

  private onExit(slot: Slot, reason: string): void {
    const i = this.slots.indexOf(slot);
    if (i < 0) return;
    this.slots.splice(i, 1);
    if (slot.cleaning) clearTimeout(slot.cleaning.timer);
    slot.job?.finish(failed(reason));
    if (this.queue.size > 0 && !this.closed) this.next(this.spawn());
  }

  private next(slot: Slot): void {
    if (slot.job !== undefined || slot.cleaning !== undefined || !this.slots.includes(slot)) return;
    const q = this.queue.shift();
    if (q === undefined) return;
    q.unlisten?.();
    q.start(slot);
  }

  private onMessage(slot: Slot, msg: FromWorker): void {
    if (msg.type === 'idle') {
      if (msg.run === slot.lastRun) slot.prepared = true;
      if (slot.cleaning?.run !== msg.run) return;
      clearTimeout(slot.cleaning.timer);
      slot.cleaning = undefined;
      this.next(slot);
      return;
    }
    const job = slot.job;
    if (!job || msg.run !== job.run) return;
    switch (msg.type) {
      case 'started':
        job.started();
        return;
      case 'scratch':
        job.scratchMade = true;
        return;
      case 'call':
        this.innerCalls.hub++;
        return relayCall(slot, job, msg);
      case 'notice': {
        // Cut and rate-limited in the worker already (a loop must not flood this thread).
        job.caller.notice(msg.text, msg.params);
        return;
      }
      case 'overran':
        slot.direct.overran(msg.key, msg.tool, msg.limitMs);
        return;
      case 'done':
        if (msg.direct !== undefined) slot.direct.watchLeft(msg.direct);
        this.innerCalls.direct += msg.directCalls ?? 0;
        job.finish(outcomeOf(msg));
    }
  }
}
