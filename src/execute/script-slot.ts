/**
 * One script worker of the pool: the thread, its batched outbox, the run it holds, and the
 * relay of a run's inner calls made on the hub's thread (worker-pool.ts decides which worker
 * runs what, and when one is stopped hard).
 */
import { Worker } from 'node:worker_threads';
import { MessageBatch, isBundle, type MessageBundle } from '../plugins/message-batch.js';
import type { ToolCaller } from '../lua-api/tool-caller.js';
import type { ContentItem } from '../registry/types.js';
import { DirectChannels, type RunGrants } from './direct-grants.js';
import type { DirectCallRecord } from './inner-observe.js';
import type { FromWorker, ToWorker, WorkerSetup } from './protocol.js';

export type ScriptOutcome = (
  | { ok: true; result: unknown; images: ContentItem[]; output: string }
  | { ok: false; error: string; output: string }
) & {
  /** The run's direct calls, when it was asked to record them (ScriptJob.observe). */
  directLog?: DirectCallRecord[];
  /** Inner calls the worker refused for their name's length (the hub counts them). */
  nameRefusals?: number;
  /** Notices the worker dropped past `execute.messages_per_second` (the hub counts them). */
  noticeRefusals?: number;
};

/** The run a slot holds. */
export interface SlotJob {
  run: number;
  finish: (o: ScriptOutcome) => void;
  caller: ToolCaller;
  started: () => void;
  /** The worker made the run's scratch folder. */
  scratchMade: boolean;
  /** Inner calls made and not yet answered. */
  pending: number;
  /** What the run may call directly; revoked when it ends or the tools change. */
  grants: RunGrants;
}

export interface Slot {
  worker: Worker;
  /** To the worker: the answers to a run's inner calls of one turn go together. */
  outbox: MessageBatch<ToWorker>;
  /** The tool of each answer in the outbox, for the error when one cannot be copied. */
  toolOf: Map<number, string>;
  job: SlotJob | undefined;
  /** A run that has answered while its worker still closes its state (runs its finalizers). */
  cleaning: { run: number; timer: NodeJS.Timeout } | undefined;
  /** The last run sent to this worker (0: none yet). */
  lastRun: number;
  /** The worker said it has a state made since `lastRun`: a run sent now starts at once. */
  prepared: boolean;
  /** The tool list this worker holds (sent with an earlier run). */
  tools: string[] | undefined;
  /** Its channels to plugin workers, for direct calls. */
  direct: DirectChannels;
}

const WORKER_URL = new URL('./worker.js', import.meta.url);

/** Starts a script worker; its messages and its end go to `on`. */
export function spawnSlot(
  setup: WorkerSetup,
  on: { message: (msg: FromWorker) => void; exit: (reason: string) => void },
): Slot {
  const worker = new Worker(WORKER_URL, {
    workerData: setup,
    // The worker never writes to stdout (it may carry MCP over stdio); anything it does write
    // goes to stderr with the logs.
    stdout: true,
    resourceLimits: { maxOldGenerationSizeMb: 256 },
  });
  worker.stdout.pipe(process.stderr);
  worker.unref();
  const toolOf = new Map<number, string>();
  const outbox = new MessageBatch<ToWorker>(worker, (msg, err) => {
    // A result that cannot be copied to the worker (a JS tool returned a function, say).
    if (msg.type === 'result')
      outbox.post({
        type: 'result',
        run: msg.run,
        call: msg.call,
        error: `the result of '${toolOf.get(msg.call) ?? '?'}' cannot be passed to the script: ${err.message}`,
      });
  });
  worker.on('message', (msg: FromWorker | MessageBundle<FromWorker>) => {
    if (!isBundle(msg)) return on.message(msg);
    for (const m of msg.messages) on.message(m);
  });
  worker.on('error', (err) => on.exit(`the script's worker failed: ${err.message}`));
  worker.on('exit', () => on.exit("the script's worker stopped"));
  return {
    worker,
    outbox,
    toolOf,
    job: undefined,
    cleaning: undefined,
    lastRun: 0,
    prepared: false,
    tools: undefined,
    direct: new DirectChannels(),
  };
}

/** Makes a run's inner call on the hub's thread and sends its answer back to the worker. */
export function relayCall(
  slot: Slot,
  job: SlotJob,
  msg: Extract<FromWorker, { type: 'call' }>,
): void {
  job.pending++;
  const reply = (m: ToWorker) => {
    if (slot.job?.run !== msg.run) return;
    // The last answer out goes at once, with the others of its turn.
    slot.toolOf.set(msg.call, msg.name);
    slot.outbox.post(m, --job.pending <= 0);
  };
  job.caller.call(msg.name, msg.args).then(
    (result) => reply({ type: 'result', run: msg.run, call: msg.call, result }),
    (err: unknown) =>
      reply({
        type: 'result',
        run: msg.run,
        call: msg.call,
        error: err instanceof Error ? err.message : String(err),
      }),
  );
}

/** A finished run's report as its outcome. */
export function outcomeOf(msg: Extract<FromWorker, { type: 'done' }>): ScriptOutcome {
  const out = outcomeFields(msg);
  if (msg.nameRefusals !== undefined) out.nameRefusals = msg.nameRefusals;
  if (msg.noticeRefusals !== undefined) out.noticeRefusals = msg.noticeRefusals;
  return out;
}

function outcomeFields(msg: Extract<FromWorker, { type: 'done' }>): ScriptOutcome {
  return msg.ok
    ? {
        ok: true,
        result: msg.result,
        images: msg.images ?? [],
        output: msg.output,
        directLog: msg.directLog,
      }
    : {
        ok: false,
        error: msg.error ?? 'the script failed',
        output: msg.output,
        directLog: msg.directLog,
      };
}

export function failed(error: string): ScriptOutcome {
  return { ok: false, error, output: '' };
}
