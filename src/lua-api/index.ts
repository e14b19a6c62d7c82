/**
 * Installs the Lua API into a state: everything a plugin (or a `moonhub run` script) sees besides
 * the sandboxed standard library and `json`, which the runtime itself provides.
 */
import type { Logger } from '../log.js';
import type { LuaState } from '../lua/state.js';
import type { Registry } from '../registry/registry.js';
import { installLog } from './log.js';
import { installRegistryApi } from './mcp-registry.js';
import { installProxyApi } from './proxy.js';
import { installChilkat } from './chilkat.js';
import { installTask } from './task.js';
import { installVfs } from './vfs.js';

export { endForgottenBatches, normalizeSchema } from './mcp-registry.js';
export { luaContext } from './context.js';
export { settleUpstreams } from './proxy.js';
export { builtinModule } from './chilkat.js';

export interface ApiOptions {
  registry: Registry;
  /** Owner of what the state registers: the plugin name, or "script". */
  owner: string;
  logger: Logger;
  /** The folder behind `/source/` for `vfs` (none for a single-file plugin). */
  root?: string;
}

export function installApi(state: LuaState, opts: ApiOptions): void {
  installRegistryApi(state, { registry: opts.registry, owner: opts.owner });
  installTask(state);
  installLog(state, opts.logger);
  installVfs(state, opts.root);
  installProxyApi(state, { registry: opts.registry, owner: opts.owner, logger: opts.logger });
  installChilkat(state, { root: opts.root });
}
