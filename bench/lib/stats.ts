/** Small statistics over samples: medians of rounds, percentiles of latencies. */

export function median(xs: number[]): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

/** The p-th percentile (0..100) by nearest rank. */
export function percentile(xs: number[] | Float64Array, p: number): number {
  if (xs.length === 0) return NaN;
  const s = Float64Array.from(xs).sort();
  const rank = Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1));
  return s[rank]!;
}

/** One measured run of one target. */
export interface Sample {
  rps: number;
  p50Ms: number;
  p99Ms: number;
  requests: number;
  /** Non-2xx answers, socket errors and timeouts. */
  errors: number;
  /** The server process's CPU time (user + system) per request, when measured. */
  cpuUsPerRequest?: number;
  /** wrk's own CPU time (user + system) over the run, when asked for (WrkRun.wrkCpu). */
  wrkCpuMs?: number;
}
