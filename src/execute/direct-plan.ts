/**
 * Which of a view's tools an execute run may call directly on their plugin's worker
 * (src/execute/direct-calls.ts): the tools of Lua plugins isolated on workers, nothing else.
 * Computed once per view and registry version, with the tool list (execute-tool.ts).
 */
import { DEFAULT_TIMEOUT_MS } from '../lua/state.js';
import type { DirectPlugin } from '../plugins/direct-port.js';
import { directTarget } from '../plugins/mirror.js';
import type { Registry } from '../registry/registry.js';
import type { DirectTable } from './protocol.js';

export interface DirectPlan {
  plugins: DirectPlugin[];
  table: DirectTable;
  /** Per plugin: its longest tool limit plus its hard-stop grace (ms). */
  maxWaitMs: number[];
}

/**
 * The plan for the tools `names` (already the caller's view), or undefined when no call may go
 * direct. A registry whose call is wrapped (tracing puts a span around every handler) keeps every
 * inner call on the hub's path, where the wrapper sees it.
 */
export function directPlan(registry: Registry, names: readonly string[]): DirectPlan | undefined {
  if (Object.hasOwn(registry, 'callResolved') || Object.hasOwn(registry, 'callTool')) return;
  const plugins: DirectPlugin[] = [];
  const table: DirectTable = { plugins: [], graces: [], tools: {} };
  for (const name of names) {
    const handler = registry.getTool(name)?.handler;
    const target = handler === undefined ? undefined : directTarget(handler);
    if (target === undefined) continue;
    let i = plugins.indexOf(target.plugin);
    if (i < 0) {
      i = plugins.push(target.plugin) - 1;
      table.plugins.push(target.plugin.name);
      table.graces.push(target.plugin.graceMs);
    }
    table.tools[name] = [i, target.timeoutMs ?? DEFAULT_TIMEOUT_MS];
  }
  if (plugins.length === 0) return undefined;
  const maxWaitMs = table.graces.slice();
  const longest = table.plugins.map(() => 0);
  for (const [i, limit] of Object.values(table.tools)) longest[i] = Math.max(longest[i]!, limit);
  for (let i = 0; i < maxWaitMs.length; i++) maxWaitMs[i]! += longest[i]!;
  return { plugins, table, maxWaitMs };
}
