/**
 * What moving plugin states onto worker threads costs a call (docs/isolation.md):
 *   node dist/bench/isolation/roundtrip.js [calls]
 * - main: the Lua echo handler called on the hub's thread, one call at a time;
 * - worker, 1 in flight: the same handler in a worker, a postMessage each way;
 * - worker, 50 in flight: pipelined, with the hub thread's busy time per call (event loop
 *   utilization), the figure that bounds the hub's throughput;
 * - sync request: a worker's blocking request answered by the hub's thread (Atomics.wait).
 */
import { MessageChannel, Worker } from 'node:worker_threads';
import { performance } from 'node:perf_hooks';
import { LuaState } from '../../src/lua/state.js';

const N = Number(process.argv[2] ?? 20000);
const ARGS = { text: 'hello' };
const ECHO = `local p = ... return { content = { { type = "text", text = p.text } } }`;

async function mainThread(): Promise<number> {
  const state = await LuaState.create({ name: 'echo-main' });
  const ref = state.load(ECHO, '=echo');
  for (let i = 0; i < 2000; i++) await state.call(ref, [ARGS]);
  const t = performance.now();
  for (let i = 0; i < N; i++) await state.call(ref, [ARGS]);
  return ((performance.now() - t) * 1000) / N;
}

async function workerRuns(): Promise<{
  serial: number;
  pipelined: number;
  hubBusy: number;
  sync: number;
}> {
  const worker = new Worker(new URL('./echo-worker.js', import.meta.url));
  await new Promise((r) => worker.once('message', r));
  const waiting = new Map<number, (v: unknown) => void>();
  worker.on('message', (m: { id: number; result: unknown }) => {
    waiting.get(m.id)?.(m.result);
    waiting.delete(m.id);
  });
  let id = 0;
  const call = (args: unknown) =>
    new Promise((resolve) => {
      const i = ++id;
      waiting.set(i, resolve);
      worker.postMessage({ id: i, args });
    });
  for (let i = 0; i < 2000; i++) await call(ARGS);
  let t = performance.now();
  for (let i = 0; i < N; i++) await call(ARGS);
  const serial = ((performance.now() - t) * 1000) / N;
  // 50 in flight, as wrk -c50 keeps the hub.
  const elu0 = performance.eventLoopUtilization();
  t = performance.now();
  let started = 0;
  await Promise.all(
    Array.from({ length: 50 }, async () => {
      while (started < N) {
        started++;
        await call(ARGS);
      }
    }),
  );
  const pipelined = ((performance.now() - t) * 1000) / N;
  const elu = performance.eventLoopUtilization(elu0);
  const hubBusy = (elu.active * 1000) / N;
  // Synchronous requests: the worker blocks, the hub thread answers from its event loop.
  const { port1, port2 } = new MessageChannel();
  const flag = new Int32Array(new SharedArrayBuffer(4));
  port1.on('message', (n: number) => {
    port1.postMessage(n);
    Atomics.store(flag, 0, 1);
    Atomics.notify(flag, 0);
  });
  const sync = (await new Promise<unknown>((resolve) => {
    const i = ++id;
    waiting.set(i, resolve);
    worker.postMessage({ id: i, sync: { port: port2, flag, n: 5000 } }, [port2]);
  })) as number;
  port1.close();
  await worker.terminate();
  return { serial, pipelined, hubBusy, sync: sync * 1000 };
}

const main = await mainThread();
const w = await workerRuns();
const fmt = (v: number) => `${v.toFixed(1)} µs`;
console.log(`calls: ${N}`);
console.log(`main thread, Lua echo, 1 in flight:        ${fmt(main)} per call`);
console.log(`worker, Lua echo, 1 in flight (round trip): ${fmt(w.serial)} per call`);
console.log(`worker, Lua echo, 50 in flight:             ${fmt(w.pipelined)} per call (wall)`);
console.log(`  hub thread busy per call (ELU):           ${fmt(w.hubBusy)}`);
console.log(`worker -> hub synchronous request:          ${fmt(w.sync)} per request`);
