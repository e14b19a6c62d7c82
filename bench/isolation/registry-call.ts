/**
 * The per-call cost of plugin isolation through the real path: registry.callTool on the echo
 * plugin (bench/plugins/echo.lua) loaded by a PluginHost on the hub's thread ('none') and on a
 * worker thread ('worker'), one call at a time and 50 in flight, with the hub thread's busy time
 * per call (event loop utilization), and the time a plugin takes to load in each mode.
 *   node dist/bench/isolation/registry-call.js [calls]
 */
import { performance } from 'node:perf_hooks';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { silentLogger } from '../../src/log.js';
import { PluginHost, type PluginIsolation } from '../../src/plugins/plugin-host.js';
import { Registry } from '../../src/registry/registry.js';

const N = Number(process.argv[2] ?? 20000);
const PLUGINS = join(fileURLToPath(new URL('.', import.meta.url)), '../../../bench/plugins');
const CTX = { hub_id: 'bench' };

async function measure(isolation: PluginIsolation): Promise<Record<string, number>> {
  const registry = new Registry({ hubId: 'bench' });
  const host = new PluginHost({
    registry,
    dirs: [PLUGINS],
    logger: silentLogger,
    watch: false,
    isolation,
  });
  let t = performance.now();
  await host.start();
  const loadMs = performance.now() - t;
  const call = () => registry.callTool('echo', { text: 'hello' }, CTX);
  for (let i = 0; i < 3000; i++) await call();
  t = performance.now();
  for (let i = 0; i < N; i++) await call();
  const serial = ((performance.now() - t) * 1000) / N;
  const elu0 = performance.eventLoopUtilization();
  t = performance.now();
  let started = 0;
  await Promise.all(
    Array.from({ length: 50 }, async () => {
      while (started < N) {
        started++;
        await call();
      }
    }),
  );
  const pipelined = ((performance.now() - t) * 1000) / N;
  const busy = (performance.eventLoopUtilization(elu0).active * 1000) / N;
  await host.stop();
  return { loadMs, serial, pipelined, busy };
}

const inThread = await measure('none');
const worker = await measure('worker');
console.log(`calls: ${N}; plugins: ${PLUGINS}`);
for (const [name, r] of [
  ['hub thread', inThread],
  ['worker', worker],
] as const) {
  console.log(
    `${name.padEnd(10)} load ${r.loadMs!.toFixed(0)} ms; 1 in flight ${r.serial!.toFixed(1)} µs/call; 50 in flight ${r.pipelined!.toFixed(1)} µs/call (wall), hub thread busy ${r.busy!.toFixed(1)} µs/call`,
  );
}
