/**
 * The entry of every plugin worker thread. It loads the plugin runtime's modules and compiles
 * the Lua wasm module at once, then waits for its setup message: a worker started ahead of need
 * (the host's spare, plugins/worker-pool.ts) is ready for a plugin within milliseconds, where a
 * cold one takes hundreds (isolate start, module graph, wasm compile).
 */
import { parentPort } from 'node:worker_threads';
import { LuaState } from '../lua/state.js';
import { compileValidator } from '../registry/schema.js';
// What plugins/plugin-worker.ts imports, loaded before the setup so its import is instant.
import '../lua-api/index.js';
import '../upstream/manager.js';
import './remote-upstreams.js';
import './remote-registry.js';
import './find-module.js';
import { deliver, provideSetup } from './worker-setup.js';
import type { PluginWorkerSetup } from './worker-protocol.js';

const port = parentPort!;
const warm = warmUp();
let started = false;

port.on('message', (msg: { type?: string; setup?: PluginWorkerSetup }) => {
  if (started) return deliver(msg as Parameters<typeof deliver>[0]);
  started = true;
  provideSetup(msg.setup!);
  // A failed wasm compile is reported by the runtime's own load (it asks for the module again).
  const run = () => import('./plugin-worker.js');
  void warm.then(run, run);
});

/**
 * What a plugin's first load pays once per thread, paid ahead: the wasm compile, a state's
 * set-up code paths, and the schema validator (ajv compiles its meta-schemas on first use, which
 * took 250-850 ms of a reload on the loaded machine).
 */
async function warmUp(): Promise<void> {
  compileValidator({ type: 'object', properties: { text: { type: 'string' } } }, 'warm-up');
  const state = await LuaState.create({ name: 'warm-up' });
  try {
    const ref = state.load('local t = { n = 1 } return t.n', '=warm-up');
    await state.call(ref, []);
    state.unref(ref);
  } finally {
    state.close();
  }
}
