/**
 * When an upstream proxy (proxy.ts) imports the upstream's lists again: at most one import runs
 * and at most one waits behind it (any number of requests meanwhile join that one), and an
 * import asked for by the upstream (`list_changed`) starts no sooner than `intervalMs` after the
 * one before started. A `list_changed` flood so costs one tools/list (prompts, resources) a
 * interval, and, unlike the SDK's trailing debounce, a steady stream of them cannot put the
 * import off for ever. An import that cost the hub's thread more (`cost`: thousands of tools
 * whose definitions change at every `list_changed`) waits longer: at least IMPORT_COST_FACTOR
 * times that cost, so one upstream's imports take at most about a tenth of the thread.
 */
export const DEFAULT_IMPORT_INTERVAL_MS = 1000;
export const IMPORT_INTERVAL_KEY = 'plugin_limits.upstream_import_interval_ms';
export const IMPORT_COST_FACTOR = 10;

/** A promise and its resolver: the callers an import covers wait on it. */
interface Covered {
  promise: Promise<void>;
  resolve: () => void;
}

function covered(): Covered {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

export class ImportPacer {
  private running: Promise<void> | undefined;
  private again = false;
  /** False when a request that must not wait (a reconnect, a refresh) joined the next import. */
  private againPaced = true;
  private lastStart = -Infinity;
  /** The callers of the import running now, and of the one waiting to start. */
  private active: Covered | undefined;
  private waiting: Covered | undefined;

  constructor(
    private readonly run: () => Promise<void>,
    private readonly intervalMs: number,
    private readonly closed: () => boolean,
    /** The hub-thread ms the last import took (its registration work). */
    private readonly cost: () => number = () => 0,
  ) {}

  /** The import in progress or about to start, if any (a fresh proxy's first is waited for). */
  get current(): Promise<void> | undefined {
    return (this.active ?? this.waiting)?.promise;
  }

  /**
   * Asks for an import. `paced` (the upstream asked): it waits out the interval. Resolves when
   * the import that covers this request is done: not when the imports stop, which a steady
   * stream of `list_changed` would put off for ever.
   */
  request(paced: boolean): Promise<void> {
    const waiting = (this.waiting ??= covered());
    if (this.running) {
      this.again = true;
      if (!paced) this.againPaced = false;
    } else {
      this.running = this.loop(paced);
    }
    return waiting.promise;
  }

  private async loop(paced: boolean): Promise<void> {
    let wait = paced;
    try {
      do {
        if (wait) {
          const gap = Math.max(this.intervalMs, IMPORT_COST_FACTOR * this.cost());
          const ms = this.lastStart + gap - performance.now();
          if (ms > 0) await new Promise((r) => setTimeout(r, ms).unref());
          if (this.closed()) break;
        }
        this.active = this.waiting;
        this.waiting = undefined;
        this.again = false;
        this.againPaced = true;
        this.lastStart = performance.now();
        try {
          await this.run();
        } finally {
          this.active?.resolve();
          this.active = undefined;
        }
        wait = this.againPaced;
      } while (this.again && !this.closed());
    } finally {
      // In the same turn as the last check: a request from now on starts a loop of its own.
      this.running = undefined;
      // Closed (or failed): nobody is left waiting for an import that will not come.
      this.waiting?.resolve();
      this.waiting = undefined;
    }
  }
}

/**
 * The hub-thread time of one import, taken in slices: an import registering thousands of
 * tools (each hashed and checked against its meta-schema, ~0.2 ms on a slow machine) held the
 * thread for seconds in one turn; it now gives the turn back every IMPORT_SLICE_MS, and its
 * busy time (not its waits) is the cost the pacer spaces the next import by.
 */
export const IMPORT_SLICE_MS = 20;

export class ImportSlices {
  private start = performance.now();
  private busy = 0;

  /** True when the current slice has run its time. */
  due(): boolean {
    return performance.now() - this.start >= IMPORT_SLICE_MS;
  }

  /** Ends the slice and resumes in a later turn, after the I/O waiting meanwhile. */
  async yield(): Promise<void> {
    this.busy += performance.now() - this.start;
    await new Promise((r) => setImmediate(r));
    this.start = performance.now();
  }

  /** The busy ms in all, the current slice included. */
  end(): number {
    return this.busy + (performance.now() - this.start);
  }
}
