/**
 * The shared words between the hub's thread and a plugin's worker (sync-questions.ts on the hub,
 * plugin-worker.ts and remote-registry.ts in the worker), and the worker's two waits on them: for
 * a synchronous answer, and for the hub to catch up with the messages it posted (its backlog).
 * Every wait is a loop of short timed waits that re-reads the words: a missed wake-up costs one
 * slice, never an error, and a hub that stopped serving the worker (the plugin unloaded, reloaded
 * or restarted) ends the wait with an error that says so.
 */
import { receiveMessageOnPort, type MessagePort } from 'node:worker_threads';

/** 1 once the hub posted an answer to a synchronous question (the worker resets it). */
export const ANSWER = 0;
/** How many of the worker's messages the hub's thread has handled (wraps as an Int32). */
export const HANDLED = 1;
/** 1 while the worker waits on HANDLED for WAKE_AT: only then does the hub wake it. */
export const WAITING = 2;
/** 1 once the hub stopped serving this worker: a waiting worker stops waiting. */
export const CLOSED = 3;
/** The HANDLED count the waiting worker needs: the hub notifies only from there on. */
export const WAKE_AT = 4;

export function newSyncFlag(): Int32Array {
  return new Int32Array(new SharedArrayBuffer(5 * Int32Array.BYTES_PER_ELEMENT));
}

/** The hub's side: `handled` messages handled; wakes the worker once it has what it waits for. */
export function publishHandled(flag: Int32Array, handled: number): void {
  Atomics.store(flag, HANDLED, handled);
  // Read after the store: a worker that set WAITING before it sees this count, or is woken.
  if (Atomics.load(flag, WAITING) !== 0 && ((handled - Atomics.load(flag, WAKE_AT)) | 0) >= 0)
    Atomics.notify(flag, HANDLED);
}

/** Longest a synchronous question, or the backlog, may wait (the hub never blocks, but may be busy). */
export const SYNC_WAIT_MS = 30_000;
/** One timed wait of the loop: the most a missed wake-up can cost. */
const SLICE_MS = 50;

/** The hub's answer to a synchronous question: `seq` names the question it answers. */
export interface SyncReply {
  seq: number;
  ok: boolean;
  value?: unknown;
  error?: string;
}

function stopped(op: string): Error {
  return new Error(
    `the hub stopped serving this plugin's worker (the plugin was unloaded, reloaded or restarted) while it waited for ${op}`,
  );
}

/**
 * The answer to question `seq`: answers to earlier questions that gave up waiting (timed out)
 * are dropped, so a late one is never taken for this one's.
 */
function takeReply(port: MessagePort, seq: number): SyncReply | undefined {
  for (;;) {
    const got = receiveMessageOnPort(port) as { message: SyncReply } | undefined;
    if (got === undefined) return undefined;
    if (got.message.seq === seq) return got.message;
  }
}

/** Waits for the answer to question `seq`, posted after ANSWER was reset to 0. */
export function waitForAnswer(
  port: MessagePort,
  flag: Int32Array,
  seq: number,
  op: string,
): SyncReply {
  const deadline = performance.now() + SYNC_WAIT_MS;
  for (;;) {
    const left = deadline - performance.now();
    Atomics.wait(flag, ANSWER, 0, Math.max(0, Math.min(left, SLICE_MS)));
    // Reset before reading the port: the hub posts an answer before it sets the word, so an
    // answer set before this reset is on the port now, and one set after wakes the next wait.
    Atomics.store(flag, ANSWER, 0);
    const reply = takeReply(port, seq);
    if (reply !== undefined) return reply;
    if (Atomics.load(flag, CLOSED) !== 0) throw stopped(`its answer to '${op}'`);
    if (left <= 0) throw new Error(`the hub did not answer '${op}' within ${SYNC_WAIT_MS} ms`);
  }
}

/**
 * Waits until at most `slack` of the `posted` messages are not yet handled. `posted` counts in
 * the same Int32 ring as the hub's HANDLED.
 */
export function waitForHandled(flag: Int32Array, posted: number, slack: number): void {
  const deadline = performance.now() + SYNC_WAIT_MS;
  Atomics.store(flag, WAKE_AT, ((posted | 0) - slack) | 0);
  Atomics.store(flag, WAITING, 1);
  try {
    for (;;) {
      const handled = Atomics.load(flag, HANDLED);
      const backlog = ((posted | 0) - handled) | 0;
      if (backlog <= slack) return;
      if (Atomics.load(flag, CLOSED) !== 0) throw stopped('the hub to handle its messages');
      const left = deadline - performance.now();
      if (left <= 0) {
        throw new Error(
          `the hub's thread did not handle this plugin's messages within ${SYNC_WAIT_MS} ms`,
        );
      }
      // Woken when HANDLED reaches WAKE_AT (the hub notifies while WAITING is set), else after a slice.
      Atomics.wait(flag, HANDLED, handled, Math.min(left, SLICE_MS));
    }
  } finally {
    Atomics.store(flag, WAITING, 0);
  }
}
