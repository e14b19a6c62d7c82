/**
 * The registry half of the `mcp` namespace (LUA_API §2): `mcp.tool`, `mcp.prompt`,
 * `mcp.resource` and their list/remove/call/count companions, batches and reset. Each is a thin
 * binding: arguments checked in Lua's wording, handlers kept as registry references of the
 * plugin's state, results converted by registry/results.
 *
 * The bindings share one RegistryBinding (mcp-binding.ts); tools, prompts and resources each
 * build theirs in their own module (mcp-tools.ts, mcp-prompts.ts, mcp-resources.ts), batches and
 * reset are here, and all go into the `mcp` library in one `defineLibrary`.
 */
import type { HostFunctionSpec, LuaState } from '../lua/state.js';
import { optString } from './args.js';
import { closeUpstreams } from './proxy.js';
import { installCallbackForms, ownerFromSource } from './botster-compat.js';
import { RegistryBinding, type RegistryBindingOptions } from './mcp-binding.js';
import { toolFunctions } from './mcp-tools.js';
import { promptFunctions } from './mcp-prompts.js';
import { resourceFunctions } from './mcp-resources.js';

export type { RegistryBindingOptions, SessionViews } from './mcp-binding.js';
export { normalizeSchema } from './mcp-tools.js';

export function installRegistryApi(state: LuaState, opts: RegistryBindingOptions): void {
  const b = new RegistryBinding(state, opts);
  state.defineLibrary('mcp', {
    ...toolFunctions(b),
    ...promptFunctions(b),
    ...resourceFunctions(b),
    ...batchFunctions(b),
    // mcp.proxy and mcp.remove_proxy: installed by ./proxy.ts (upstream servers).
  });
  installCallbackForms(state);
}

const closeOpenBatches = new WeakMap<LuaState, () => void>();

/** `mcp.begin_batch`, `mcp.end_batch` and `mcp.reset`. */
function batchFunctions(b: RegistryBinding): Record<string, HostFunctionSpec> {
  const { registry } = b;
  let openBatches = 0;
  // A plugin that forgets end_batch must not freeze notifications for the whole hub.
  closeOpenBatches.set(b.state, () => {
    while (openBatches > 0) {
      openBatches--;
      registry.endBatch();
    }
  });
  return {
    begin_batch: {
      fn: () => {
        registry.beginBatch();
        openBatches++;
        return undefined;
      },
    },
    end_batch: {
      fn: () => {
        // As Botster: ending a batch that was never begun does nothing.
        if (openBatches === 0) return undefined;
        openBatches--;
        registry.endBatch();
        return undefined;
      },
    },
    reset: {
      fn: (args, call) => {
        const given = optString(args, call, 1, 'reset');
        const source = given === undefined ? undefined : ownerFromSource(given);
        registry.reset(source);
        // What a reset owner imported from upstreams must not come back at the next re-import.
        void closeUpstreams(registry, source);
        return undefined;
      },
    },
  };
}

/** Ends any batch the plugin's code left open. */
export function endForgottenBatches(state: LuaState): void {
  closeOpenBatches.get(state)?.();
}
