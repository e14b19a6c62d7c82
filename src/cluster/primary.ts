/**
 * `moonhub serve --workers N`: this process becomes the node:cluster primary. It forks N workers
 * that each run the whole hub and listen on the same port (the primary accepts connections and
 * hands them out round-robin), relays their bus messages (`ipc-bus.ts`), restarts a worker that
 * dies (100 ms doubling to 10 s while they keep dying young), and stops them all on SIGINT or
 * SIGTERM: it tells each worker to drain (SHUTDOWN_MESSAGE), waits for them (their drain
 * deadline plus a margin, then SIGKILL), and on a second signal kills them and exits at once.
 * It serves nothing itself.
 */
import cluster, { type Worker } from 'node:cluster';
import { randomBytes } from 'node:crypto';
import { constants } from 'node:os';
import type { Logger } from '../log.js';
import { BusRelay } from './ipc-bus.js';

export const WORKER_ENV = 'MOONHUB_WORKER';
/** The cluster's answer key (cluster/answers.ts), base64; a worker takes it out of its env. */
const ANSWER_KEY_ENV = 'MOONHUB_ANSWER_KEY';
/** A worker that lived this long resets the restart backoff. */
const HEALTHY_MS = 30_000;
const MAX_BACKOFF_MS = 10_000;
/** Beyond their drain deadline, how long stopping workers get before they are killed. */
const STOP_MARGIN_MS = 7_000;
/** The IPC message that starts a worker's graceful shutdown (src/cli/shutdown.ts). */
export const SHUTDOWN_MESSAGE = 'moonhub:shutdown';

export interface PrimaryOptions {
  workers: number;
  logger: Logger;
  /** The workers' drain deadline (config shutdown.drain_ms), to know how long to wait. */
  drainMs: number;
  /** Called once every worker listens: the URL clients use. */
  onListening: (address: { address: string | null; port: number }) => void;
}

/** Runs until SIGINT/SIGTERM and every worker has stopped. */
export async function runPrimary(opts: PrimaryOptions): Promise<void> {
  const { logger } = opts;
  const live = new Set<Worker>();
  let stopping = false;
  let backoff = 100;
  let announced = false;
  const listening = new Set<number>();
  const relay = new BusRelay(() => live);
  // Every worker tags its requests' ids with this key and checks the answers' tags with it.
  const answerKey = randomBytes(32).toString('base64');

  const fork = (slot: number): void => {
    const started = Date.now();
    const worker = cluster.fork({ [WORKER_ENV]: String(slot), [ANSWER_KEY_ENV]: answerKey });
    live.add(worker);
    relay.add(worker);
    worker.on('listening', (address) => {
      listening.add(slot);
      logger.info({ worker: slot, pid: worker.process.pid }, 'worker listening');
      if (!announced && listening.size === opts.workers) {
        announced = true;
        opts.onListening(address);
      }
    });
    worker.on('exit', (code, signal) => {
      live.delete(worker);
      if (stopping) return;
      listening.delete(slot);
      const lived = Date.now() - started;
      backoff = lived > HEALTHY_MS ? 100 : Math.min(backoff * 2, MAX_BACKOFF_MS);
      const delay = lived > HEALTHY_MS ? 0 : backoff;
      logger.error(
        { worker: slot, pid: worker.process.pid, code, signal, restart_in_ms: delay },
        'worker died; restarting it',
      );
      process.stderr.write(
        `moonhub: worker ${slot} (pid ${worker.process.pid}) died (${signal ?? code}); restarting\n`,
      );
      setTimeout(() => {
        if (!stopping) fork(slot);
      }, delay).unref();
    });
  };

  for (let slot = 1; slot <= opts.workers; slot++) fork(slot);

  await new Promise<void>((done) => {
    let killer: NodeJS.Timeout | undefined;
    const stop = (signal: NodeJS.Signals) => {
      if (stopping) {
        logger.warn({ signal }, 'shutdown: second signal, killing the workers and exiting at once');
        for (const w of live) w.process.kill('SIGKILL');
        process.exit(128 + (constants.signals[signal] ?? 15));
      }
      stopping = true;
      logger.info(
        { signal, workers: live.size, drain_ms: opts.drainMs },
        'shutdown: telling the workers to drain',
      );
      if (live.size === 0) return done();
      killer = setTimeout(() => {
        logger.error({ workers: live.size }, 'shutdown: workers still running; killing them');
        for (const w of live) w.process.kill('SIGKILL');
      }, opts.drainMs + STOP_MARGIN_MS);
      for (const w of live) {
        w.once('exit', () => {
          if (live.size === 0) {
            clearTimeout(killer);
            logger.info('shutdown: every worker has stopped');
            done();
          }
        });
        // A worker whose IPC channel is gone still drains on SIGTERM.
        if (w.isConnected()) w.send(SHUTDOWN_MESSAGE);
        else w.process.kill('SIGTERM');
      }
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
}

let answerKey: Buffer | undefined;

/**
 * A worker's answer key from the primary; undefined elsewhere. Taken out of the environment the
 * first time, so nothing this process starts later (an upstream's command) inherits it.
 */
export function workerAnswerKey(): Buffer | undefined {
  const text = process.env[ANSWER_KEY_ENV];
  delete process.env[ANSWER_KEY_ENV];
  if (text !== undefined && workerSlot() !== undefined) answerKey = Buffer.from(text, 'base64');
  return answerKey;
}

/** This process is a worker of `serve --workers`: its slot (1..N), else undefined. */
export function workerSlot(): number | undefined {
  if (!cluster.isWorker) return undefined;
  const n = Number(process.env[WORKER_ENV]);
  return Number.isInteger(n) && n > 0 ? n : undefined;
}
