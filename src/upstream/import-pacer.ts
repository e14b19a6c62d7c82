/**
 * When an upstream proxy (proxy.ts) imports the upstream's lists again: at most one import runs
 * and at most one waits behind it (any number of requests meanwhile join that one), and an
 * import asked for by the upstream (`list_changed`) starts no sooner than `intervalMs` after the
 * one before started. A `list_changed` flood so costs one tools/list (prompts, resources) a
 * interval, and, unlike the SDK's trailing debounce, a steady stream of them cannot put the
 * import off for ever.
 */
export const DEFAULT_IMPORT_INTERVAL_MS = 1000;
export const IMPORT_INTERVAL_KEY = 'plugin_limits.upstream_import_interval_ms';

export class ImportPacer {
  private running: Promise<void> | undefined;
  private again = false;
  private lastStart = -Infinity;

  constructor(
    private readonly run: () => Promise<void>,
    private readonly intervalMs: number,
    private readonly closed: () => boolean,
  ) {}

  /** The import in progress, if any (a fresh proxy's first import is waited for). */
  get current(): Promise<void> | undefined {
    return this.running;
  }

  /**
   * Asks for an import. `paced` (the upstream asked): it waits out the interval. Resolves when
   * the import that covers this request is done.
   */
  request(paced: boolean): Promise<void> {
    if (this.running) {
      this.again = true;
      return this.running;
    }
    this.running = this.loop(paced).finally(() => (this.running = undefined));
    return this.running;
  }

  private async loop(paced: boolean): Promise<void> {
    let wait = paced;
    do {
      if (wait) {
        const ms = this.lastStart + this.intervalMs - performance.now();
        if (ms > 0) await new Promise((r) => setTimeout(r, ms).unref());
        if (this.closed()) return;
      }
      wait = true;
      this.again = false;
      this.lastStart = performance.now();
      await this.run();
    } while (this.again && !this.closed());
  }
}
