/**
 * The config file's `plugin_limits` key (snake_case, checked by the schema) turned into the
 * camelCase bounds the Lua API takes (src/lua-api/plugin-limits.ts, which config/ does not import:
 * the compiler checks the shape where the hub hands it over).
 */

/** `plugin_limits:` in the config file. */
export interface PluginLimitsConfig {
  result_bytes?: number;
  error_bytes?: number;
  spawn_per_call?: number;
  message_bytes?: number;
  messages_per_second?: number;
  messages_per_second_per_principal?: number;
  registrations?: number;
  upstreams?: number;
  write_bytes?: number;
  upstream_answer_bytes?: number;
  upstream_pipeline?: number;
  upstream_requests_per_second?: number;
  upstream_requests_in_flight?: number;
  upstream_import_interval_ms?: number;
  resource_updates_per_second?: number;
  calls_in_flight?: number;
  calls_in_flight_per_principal?: number;
  background_task_ms?: number;
  task_restart_quiet_ms?: number;
}

type CamelCase<S extends string> = S extends `${infer H}_${infer T}`
  ? `${H}${Capitalize<CamelCase<T>>}`
  : S;

/** The bounds as the config file gives them, camelCased. */
export type PluginLimitSettings = {
  [K in keyof PluginLimitsConfig as CamelCase<K & string>]?: number;
};

export function pluginLimitsOf(section: PluginLimitsConfig | undefined): PluginLimitSettings {
  const out: Record<string, number> = {};
  for (const [key, value] of Object.entries(section ?? {}))
    if (typeof value === 'number')
      out[key.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase())] = value;
  return out as PluginLimitSettings;
}
