/**
 * The config file's `plugin_limits` key (snake_case, checked by the schema) turned into the
 * bounds the Lua API takes (src/lua-api/plugin-limits.ts).
 */
import { PLUGIN_LIMIT_KEYS, type PluginLimits } from '../lua-api/plugin-limits.js';

export function pluginLimitsOf(section: Record<string, number> | undefined): Partial<PluginLimits> {
  const out: Partial<PluginLimits> = {};
  if (section === undefined) return out;
  for (const [option, key] of Object.entries(PLUGIN_LIMIT_KEYS)) {
    const value = section[key.slice('plugin_limits.'.length)];
    if (value !== undefined) out[option as keyof PluginLimits] = value;
  }
  return out;
}
