/**
 * The leak check: 100,000 tools/call in one 2025 session, then 100,000 in the stateless
 * 2026-07-28 era, against a hub with --expose-gc; the heap after a full GC is compared before and
 * after each run (the SDK 1.x grew ~5 KB per JSON-mode request).
 */
import { startHub, type HeapReport, type Proc } from '../lib/proc.js';
import { echoCall, openSession, type RequestSpec } from '../lib/rpc.js';
import { runWrk } from '../lib/wrk.js';
import { ECHO_PLUGINS } from './throughput.js';

export interface LeakRun {
  era: 'legacy' | 'modern';
  requests: number;
  errors: number;
  heapBeforeMB: number;
  heapAfterMB: number;
  heapBytesPerRequest: number;
  /** ArrayBuffers include the Lua VM's WebAssembly memory. */
  arrayBuffersBytesPerRequest: number;
  rssBytesPerRequest: number;
}

const mb = (b: number) => Math.round((b / 1048576) * 100) / 100;

/** Runs wrk in slices until `total` requests went through. */
async function drive(s: RequestSpec, total: number): Promise<{ requests: number; errors: number }> {
  let requests = 0;
  let errors = 0;
  while (requests < total) {
    const left = total - requests;
    const r = await runWrk(s, { connections: 50, seconds: left > 30_000 ? 3 : 1 });
    requests += r.requests;
    errors += r.errors;
  }
  return { requests, errors };
}

function leak(
  era: 'legacy' | 'modern',
  run: { requests: number; errors: number },
  a: HeapReport,
  b: HeapReport,
): LeakRun {
  return {
    era,
    requests: run.requests,
    errors: run.errors,
    heapBeforeMB: mb(a.heapUsed),
    heapAfterMB: mb(b.heapUsed),
    heapBytesPerRequest: Math.round(((b.heapUsed - a.heapUsed) / run.requests) * 100) / 100,
    arrayBuffersBytesPerRequest:
      Math.round(((b.arrayBuffers - a.arrayBuffers) / run.requests) * 100) / 100,
    rssBytesPerRequest: Math.round(((b.rss - a.rss) / run.requests) * 100) / 100,
  };
}

export async function measureLeaks(
  total: number,
  procs: Proc[],
  log: (line: string) => void,
): Promise<LeakRun[]> {
  const hub = await startHub('moonhub-leak', {
    plugins: [ECHO_PLUGINS],
    watch: false,
    probe: true,
  });
  procs.push(hub);
  const out: LeakRun[] = [];
  const specs = {
    legacy: echoCall(hub.url, 'legacy', await openSession(hub.url)),
    modern: echoCall(hub.url, 'modern'),
  };
  for (const era of ['legacy', 'modern'] as const) {
    // Warm up first so JIT code and caches are in place before the first heap reading.
    await drive(specs[era], 20_000);
    const before = await hub.heap();
    const run = await drive(specs[era], total);
    const after = await hub.heap();
    out.push(leak(era, run, before, after));
    log(
      `memory: ${era}: ${run.requests} calls, heap ${mb(before.heapUsed)} -> ${mb(after.heapUsed)} MB`,
    );
  }
  return out;
}
