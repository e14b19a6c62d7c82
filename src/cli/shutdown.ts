/**
 * Graceful shutdown of `serve` (HTTP, stdio, and each worker of `--workers`): the first SIGTERM
 * or SIGINT stops new work, lets calls in flight answer up to the drain deadline, answers the
 * rest with `drain_deadline`, closes streams and connections, then the hub (plugins, upstream
 * sessions and their child processes, execute workers) and the audit log, and exits 0. A second
 * signal exits at once with 128 + its number. One log line per phase.
 */
import { constants } from 'node:os';
import type { Logger } from '../log.js';
import { SHUTDOWN_MESSAGE, workerSlot } from '../cluster/primary.js';
import type { Drain } from '../server/drain.js';
import { createMcpDispatcher, serveStdio, type HttpServerHandle } from '../server/index.js';

/** After the drain, how long closing streams, connections and the hub may take in all. */
const CLOSE_GRACE_MS = 5_000;
/** How long a closing connection gets to send its last bytes before it is cut. */
export const CONNECTION_GRACE_MS = 1_000;

export interface ShutdownSteps {
  logger: Logger;
  drain: Drain;
  drainMs: number;
  /** What is being stopped, for the log ("HTTP", "stdio", "worker 2"). */
  what: string;
  /** Stops new work at the door (HTTP: stops listening). */
  stopAccepting(): void;
  /** After the drain: ends streams (GET, listen) and connections. */
  closeTransport(): Promise<void>;
  /** Then everything else: operations (audit flush), access, hub, cluster. */
  closeRest(): Promise<void>;
}

type Trigger = (why: string, code: number) => void;

/**
 * Waits for the first shutdown signal (or `external`, e.g. the cluster primary's message), runs
 * the steps, and exits the process. Resolves never; the process ends in here.
 */
export function shutdownOnSignal(
  steps: ShutdownSteps,
  opts: { ignoreSigint?: boolean; external?: (trigger: (why: string) => void) => void } = {},
): Promise<never> {
  const { logger } = steps;
  let started = false;
  const trigger: Trigger = (why, code) => {
    if (started) {
      logger.warn({ signal: why }, 'shutdown: second signal, exiting at once');
      process.exit(code);
    }
    started = true;
    void run(steps, why);
  };
  const onSignal = (signal: NodeJS.Signals) =>
    trigger(signal, 128 + (constants.signals[signal] ?? 15));
  process.on('SIGTERM', onSignal);
  // Workers of --workers share the terminal's process group: the primary relays Ctrl-C to them.
  if (opts.ignoreSigint === true) process.on('SIGINT', () => {});
  else process.on('SIGINT', onSignal);
  opts.external?.((why) => trigger(why, 1));
  return new Promise<never>(() => {});
}

async function run(steps: ShutdownSteps, why: string): Promise<void> {
  const { logger, drain, drainMs } = steps;
  // Whatever hangs after the drain (a stuck upstream close), the process still ends.
  setTimeout(() => {
    logger.error({ after_ms: drainMs + CLOSE_GRACE_MS }, 'shutdown: closing hung; exiting');
    process.exit(1);
  }, drainMs + CLOSE_GRACE_MS).unref();
  const t0 = Date.now();
  logger.info(
    { signal: why, inflight: drain.inflight, drain_ms: drainMs },
    `shutdown: ${steps.what} stopped accepting; draining ${drain.inflight} call(s) in flight`,
  );
  drain.begin();
  steps.stopAccepting();
  const outcome = await drain.settle(drainMs);
  logger.info(
    { ...outcome, ms: Date.now() - t0 },
    outcome.aborted === 0
      ? `shutdown: drained, ${outcome.finished} call(s) answered`
      : `shutdown: drain deadline passed, ${outcome.aborted} call(s) aborted with drain_deadline`,
  );
  await steps.closeTransport();
  logger.info('shutdown: streams and connections closed');
  await steps.closeRest();
  logger.info({ ms: Date.now() - t0 }, 'shutdown: hub stopped (plugins, upstreams, audit); exit 0');
  // The log is written synchronously (src/log.ts), so nothing is lost by exiting here.
  process.exit(0);
}

/**
 * `serve` over HTTP (a single process, or one worker of `--workers`) until its shutdown: a
 * worker hears it from the primary (which also relays Ctrl-C), or on its own SIGTERM.
 */
export function stopHttpOnSignal(
  o: { logger: Logger; drain: Drain; drainMs: number; http: HttpServerHandle },
  closeRest: () => Promise<void>,
): Promise<never> {
  const slot = workerSlot();
  return shutdownOnSignal(
    {
      logger: o.logger,
      drain: o.drain,
      drainMs: o.drainMs,
      what: slot === undefined ? 'HTTP' : `worker ${slot}`,
      stopAccepting: () => o.http.stopAccepting(),
      closeTransport: () => o.http.close(CONNECTION_GRACE_MS),
      closeRest,
    },
    {
      ignoreSigint: slot !== undefined,
      external:
        slot === undefined
          ? undefined
          : (trigger) =>
              process.on('message', (m: unknown) => {
                if (m === SHUTDOWN_MESSAGE) trigger('primary');
              }),
    },
  );
}

/** stdio with its dispatcher tracked for graceful shutdown. */
export function serveDrainedStdio(
  registry: Parameters<typeof serveStdio>[0],
  opts: Parameters<typeof serveStdio>[1],
  drain: Drain,
): ReturnType<typeof serveStdio> {
  return serveStdio(registry, {
    ...opts,
    dispatcher: drain.wrap(opts.dispatcher ?? createMcpDispatcher(registry, opts), opts.refused),
  });
}
