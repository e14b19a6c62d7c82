/**
 * The config file's `execute` key: the `execute` built-in on or off and its limits, in the file's
 * snake_case, turned into the camelCase options the built-in takes (src/execute/options.ts, which
 * config/ does not import: the shape is derived from the file's keys, and the compiler checks it
 * against the built-in's where the CLI hands it over).
 */

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
  write_bytes?: number;
  message_bytes?: number;
  messages_per_second?: number;
  code_cache_bytes?: number;
  search_query_chars?: number;
  search_query_words?: number;
}

type CamelCase<S extends string> = S extends `${infer H}_${infer T}`
  ? `${H}${Capitalize<CamelCase<T>>}`
  : S;

/** The built-in's options as the config file gives them: each key of `ExecuteConfig`, camelCased. */
export type ExecuteSettings = {
  [K in keyof ExecuteConfig as CamelCase<K & string>]?: ExecuteConfig[K];
};

function camel(key: string): string {
  return key.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());
}

/** Default of the wall time when only `max_timeout_ms` is set (src/execute/options.ts). */
const DEFAULT_TIMEOUT_MS = 30_000;

/**
 * The built-in's options from the file's section (already checked against the schema). The
 * one rule the schema cannot state, a default wall time above the ceiling, is checked here.
 */
export function executeOptionsOf(section: ExecuteConfig | false | undefined): ExecuteSettings {
  if (section === undefined) return {};
  if (section === false) return { enabled: false };
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(section))
    if (value !== undefined) out[camel(key)] = value;
  const max = section.max_timeout_ms;
  if (max !== undefined && section.timeout_ms !== undefined && section.timeout_ms > max)
    throw new Error(
      `config file: 'execute.timeout_ms' (${section.timeout_ms}) must not exceed 'execute.max_timeout_ms' (${max})`,
    );
  // A ceiling below the default wall time lowers the default with it.
  if (max !== undefined && section.timeout_ms === undefined && max < DEFAULT_TIMEOUT_MS)
    out.timeoutMs = max;
  return out as ExecuteSettings;
}
