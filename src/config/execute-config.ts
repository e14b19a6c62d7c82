/**
 * The config file's `execute` key: the `execute` built-in on or off and its limits, in the file's
 * snake_case, turned into the options the built-in takes (src/execute/options.ts).
 */
import type { ExecuteOptions } from '../execute/options.js';

/** `execute:` in the config file; `false` leaves the tool out, like `enabled: false`. */
export interface ExecuteConfig {
  enabled?: boolean;
  timeout_ms?: number;
  max_timeout_ms?: number;
  instructions?: number;
  memory_bytes?: number;
  output_bytes?: number;
  result_bytes?: number;
  max_calls?: number;
  max_concurrent_calls?: number;
  workers?: number;
  max_queued?: number;
  grace_ms?: number;
  cleanup_ms?: number;
  /** Absolute once loaded (relative to the config file in the file). */
  root?: string;
}

const KEYS: Record<keyof Omit<ExecuteConfig, 'enabled'>, keyof ExecuteOptions> = {
  timeout_ms: 'timeoutMs',
  max_timeout_ms: 'maxTimeoutMs',
  instructions: 'instructions',
  memory_bytes: 'memoryBytes',
  output_bytes: 'outputBytes',
  result_bytes: 'resultBytes',
  max_calls: 'maxCalls',
  max_concurrent_calls: 'maxConcurrentCalls',
  workers: 'workers',
  max_queued: 'maxQueued',
  grace_ms: 'graceMs',
  cleanup_ms: 'cleanupMs',
  root: 'root',
};

/** Default of the wall time when only `max_timeout_ms` is set (src/execute/options.ts). */
const DEFAULT_TIMEOUT_MS = 30_000;

/**
 * The built-in's options from the file's section (already checked against the schema). The
 * one rule the schema cannot state, a default wall time above the ceiling, is checked here.
 */
export function executeOptionsOf(section: ExecuteConfig | false | undefined): ExecuteOptions {
  if (section === undefined) return {};
  if (section === false) return { enabled: false };
  const out: Record<string, unknown> = {};
  if (section.enabled !== undefined) out.enabled = section.enabled;
  for (const [key, option] of Object.entries(KEYS)) {
    const value = section[key as keyof typeof KEYS];
    if (value !== undefined) out[option] = value;
  }
  const max = section.max_timeout_ms;
  if (max !== undefined && section.timeout_ms !== undefined && section.timeout_ms > max)
    throw new Error(
      `config file: 'execute.timeout_ms' (${section.timeout_ms}) must not exceed 'execute.max_timeout_ms' (${max})`,
    );
  // A ceiling below the default wall time lowers the default with it.
  if (max !== undefined && section.timeout_ms === undefined && max < DEFAULT_TIMEOUT_MS)
    out.timeoutMs = max;
  return out as ExecuteOptions;
}
