/**
 * The hub's code-mode built-ins: `execute` (owner `builtin:execute`) and `search_tools` (owner
 * `builtin:search_tools`), registered in the registry like any plugin's tools so scoping treats
 * them the same way.
 */
import type { Logger } from '../log.js';
import type { Registry } from '../registry/registry.js';
import { EXECUTE_DESCRIPTION, EXECUTE_OWNER, executeHandler } from './execute-tool.js';
import type { InnerCallSink } from './inner-observe.js';
import { resolveExecuteOptions, type ExecuteOptions } from './options.js';
import {
  SEARCH_DESCRIPTION,
  SEARCH_OWNER,
  searchInputSchema,
  searchToolsHandler,
} from './search-tools.js';
import { ScriptPool, type ExecuteStats } from './worker-pool.js';

export { EXECUTE_OWNER } from './execute-tool.js';
export { SEARCH_OWNER } from './search-tools.js';
export type { ExecuteOptions } from './options.js';
export type { InnerCallSink, InnerCallStart, InnerCallEnd } from './inner-observe.js';

export interface CodeModeBuiltins {
  /** Terminates the script workers. */
  close(): Promise<void>;
  /** Scripts running and queued now; undefined when execute is off. */
  stats(): ExecuteStats | undefined;
  /** Announces every inner call of every run from now on (the hub's observers). */
  observeInnerCalls(sink: InnerCallSink): void;
}

export function registerCodeMode(
  registry: Registry,
  options: ExecuteOptions,
  logger: Logger,
): CodeModeBuiltins {
  const opts = resolveExecuteOptions(options);
  const search = {
    queryChars: opts.searchQueryChars,
    queryWords: opts.searchQueryWords,
    onRefused: opts.onRefused,
  };
  registry.addTool(SEARCH_OWNER, {
    name: 'search_tools',
    description: SEARCH_DESCRIPTION,
    inputSchema: searchInputSchema(search),
    annotations: { title: 'Search the tools', readOnlyHint: true },
    handler: searchToolsHandler(registry, search),
  });
  // `enabled: false` (config `execute: false`) leaves out the tool and its workers.
  if (!opts.enabled)
    return { close: async () => undefined, stats: () => undefined, observeInnerCalls: () => {} };
  const pool = new ScriptPool(opts, logger);
  let sink: InnerCallSink | undefined;
  registry.addTool(EXECUTE_OWNER, {
    name: 'execute',
    description: EXECUTE_DESCRIPTION,
    inputSchema: {
      type: 'object',
      properties: {
        code: { type: 'string', description: 'A Lua 5.4 chunk; its return value is the result.' },
        timeout_ms: {
          type: 'integer',
          minimum: 1,
          maximum: opts.maxTimeoutMs,
          description: `Wall-time limit in ms (default ${opts.timeoutMs}).`,
        },
      },
      required: ['code'],
      additionalProperties: false,
    },
    annotations: { title: 'Run a Lua script over the tools', openWorldHint: true },
    handler: executeHandler(registry, pool, opts, logger, () => sink),
  });
  // A run's direct grant holds the tools it had at its start: a change revokes it.
  const unwatch = registry.onChange((kinds) => {
    if (kinds.has('tools')) pool.revokeDirect();
  });
  pool.warm();
  return {
    close: () => {
      unwatch();
      return pool.close();
    },
    stats: () => pool.stats(),
    observeInnerCalls: (s) => (sink = s),
  };
}
