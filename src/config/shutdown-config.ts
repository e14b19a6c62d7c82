/**
 * The config file's `shutdown` key: how long `serve` lets calls in flight finish after SIGTERM or
 * SIGINT before it answers them with `drain_deadline` (docs/security.md, "Shutdown").
 */

export interface ShutdownConfig {
  /** The drain deadline in ms (default 10000; 0 aborts at once). */
  drain_ms?: number;
}

export const DEFAULT_DRAIN_MS = 10_000;

/** The drain deadline: `--drain-ms`, else `shutdown.drain_ms`, else 10 s. */
export function drainMsOf(section: ShutdownConfig | undefined, flag?: number): number {
  return flag ?? section?.drain_ms ?? DEFAULT_DRAIN_MS;
}
