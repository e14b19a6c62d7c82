/**
 * Preloaded into a benchmarked hub (`node --expose-gc --import hub-probe.js bin/moonhub.js ...`)
 * so the bench can ask, over the IPC channel, for a full GC and the memory figures after it. It
 * lives in the bench, not in the hub: the hub itself has no diagnostics endpoint.
 */
interface HeapReport {
  heapUsed: number;
  external: number;
  arrayBuffers: number;
  rss: number;
}

function collect(): HeapReport {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc !== undefined) {
    // Twice: the first pass can leave objects that finalizers only released for the second.
    gc();
    gc();
  }
  const m = process.memoryUsage();
  return { heapUsed: m.heapUsed, external: m.external, arrayBuffers: m.arrayBuffers, rss: m.rss };
}

if (process.send !== undefined) {
  process.on('message', (msg: unknown) => {
    if (msg === 'heap') process.send!({ heap: collect() });
  });
  // The channel must not keep the hub alive once it is asked to stop.
  process.channel?.unref();
}
