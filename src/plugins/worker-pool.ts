/**
 * Plugin worker threads, with one started ahead of need. Starting a worker (a V8 isolate, the
 * runtime's module graph, the Lua wasm compile) takes hundreds of milliseconds; a reload or a
 * restart that takes the spare only loads the plugin's code. The first spare is made at the
 * first reload (a hub that never reloads never pays for an idle worker; that reload is cold),
 * then again in the background after each reload: at most one idle worker per host.
 */
import { Worker } from 'node:worker_threads';
import type { Logger } from '../log.js';

const BOOT_URL = new URL('./worker-boot.js', import.meta.url);
/** The V8 heap of a plugin's worker (its Lua memory is the state's own ceiling, in wasm). */
export const WORKER_HEAP_MB = 256;
/** How long after a take the next spare is started (lets the taker's load go first). */
const REFILL_DELAY_MS = 50;

/** A new plugin worker thread; it waits for its setup message (plugins/worker-boot.ts). */
export function startWorker(): Worker {
  const worker = new Worker(BOOT_URL, {
    // stdout may carry MCP (stdio): anything the worker prints goes to stderr with the logs.
    stdout: true,
    // A plugin's JS-side heap (values being converted) is bounded too; past it the worker
    // dies and the plugin is restarted. Lua's own memory has the state's ceiling.
    resourceLimits: { maxOldGenerationSizeMb: WORKER_HEAP_MB },
  });
  worker.stdout.pipe(process.stderr);
  worker.unref();
  return worker;
}

export class WorkerPool {
  private spare: Worker | undefined;
  private refill: NodeJS.Timeout | undefined;
  private closed = false;
  /** Off during the host's first load: those takes make no spare. */
  private armed = false;

  /** `spares`: 0 starts every worker on demand, 1 keeps one ready (config plugins.spare_worker). */
  constructor(
    private readonly spares: number,
    private readonly logger: Logger,
  ) {}

  /** From now on, a take makes the next spare (called once the host's first load is done). */
  arm(): void {
    this.armed = true;
  }

  /** Starts the spare now, if there is none. */
  prepare(): void {
    if (this.spares > 0 && !this.closed && this.spare === undefined) this.fill();
  }

  /**
   * A worker for a plugin: the spare when there is one, else a new one. `refill`: make the next
   * spare in the background. A hard-stop restart passes false: restarts come in bursts under
   * attack, and a background boot then would take CPU from the plugins still serving.
   */
  take(refill = true): Worker {
    const w = this.spare;
    this.spare = undefined;
    if (refill && this.armed && this.spares > 0 && !this.closed && this.refill === undefined) {
      this.refill = setTimeout(() => {
        this.refill = undefined;
        this.prepare();
      }, REFILL_DELAY_MS);
      this.refill.unref();
    }
    if (w === undefined) return startWorker();
    w.removeAllListeners('error');
    w.removeAllListeners('exit');
    return w;
  }

  close(): void {
    this.closed = true;
    if (this.refill) clearTimeout(this.refill);
    const w = this.spare;
    this.spare = undefined;
    if (w) void w.terminate();
  }

  private fill(): void {
    const w = startWorker();
    this.spare = w;
    // A spare that fails before it is used is dropped (the next take starts a fresh worker).
    w.on('error', (err) => {
      this.logger.warn({ err: err.message }, `spare plugin worker failed: ${err.message}`);
    });
    w.on('exit', () => {
      if (this.spare === w) this.spare = undefined;
    });
  }
}
