/** What the bench measures per row, and how a row's figures become ratios to its reference. */
import { median, type Sample } from './stats.js';

export type RowKind = 'throughput' | 'latency';

export interface Row {
  id: string;
  label: string;
  kind: RowKind;
  /** The row its ratios are taken against (measured in the same run). */
  ref: string;
  connections: number;
  samples: Sample[];
  rssBytes: number[];
  /** Why the row was not measured ("n/a: ..."). */
  na?: string;
  note?: string;
}

export interface RowResult {
  id: string;
  label: string;
  kind: RowKind;
  ref: string;
  connections: number;
  na?: string;
  note?: string;
  rounds: number;
  rps: number;
  p50Ms: number;
  p99Ms: number;
  rssMB: number;
  /** Server CPU time per request (µs), median of the rounds. */
  cpuUs: number;
  errors: number;
  /** rps ÷ ref rps (higher is better). */
  rpsRatio: number;
  /** ref CPU per request ÷ this row's (higher is better): CPU efficiency against the ref. */
  cpuRatio: number;
  /** p50 ÷ ref p50, p99 ÷ ref p99, RSS ÷ ref RSS (lower is better). */
  p50Ratio: number;
  p99Ratio: number;
  rssRatio: number;
}

export function newRow(
  id: string,
  label: string,
  opts: { kind?: RowKind; ref?: string; connections?: number; note?: string } = {},
): Row {
  return {
    id,
    label,
    kind: opts.kind ?? 'throughput',
    ref: opts.ref ?? 'bare',
    connections: opts.connections ?? 50,
    samples: [],
    rssBytes: [],
    note: opts.note,
  };
}

function round(x: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}

/** Medians of the rounds, then ratios to each row's reference. */
export function summarize(rows: Row[]): RowResult[] {
  const base = new Map<
    string,
    { rps: number; p50: number; p99: number; rss: number; cpu: number }
  >();
  for (const r of rows) {
    if (r.na !== undefined || r.samples.length === 0) continue;
    base.set(r.id, {
      rps: median(r.samples.map((s) => s.rps)),
      p50: median(r.samples.map((s) => s.p50Ms)),
      p99: median(r.samples.map((s) => s.p99Ms)),
      rss: median(r.rssBytes),
      cpu: median(
        r.samples.flatMap((s) => (s.cpuUsPerRequest === undefined ? [] : [s.cpuUsPerRequest])),
      ),
    });
  }
  return rows.map((r) => {
    const me = base.get(r.id);
    const ref = base.get(r.ref);
    const ratio = (a: number | undefined, b: number | undefined) =>
      a === undefined || b === undefined || b === 0 ? NaN : round(a / b, 4);
    return {
      id: r.id,
      label: r.label,
      kind: r.kind,
      ref: r.ref,
      connections: r.connections,
      na: r.na ?? (me === undefined ? 'n/a: not measured' : undefined),
      note: r.note,
      rounds: r.samples.length,
      rps: me ? round(me.rps, 1) : NaN,
      p50Ms: me ? round(me.p50, 3) : NaN,
      p99Ms: me ? round(me.p99, 3) : NaN,
      rssMB: me ? round(me.rss / 1048576, 1) : NaN,
      cpuUs: me ? round(me.cpu, 2) : NaN,
      errors: r.samples.reduce((n, s) => n + s.errors, 0),
      rpsRatio: ratio(me?.rps, ref?.rps),
      cpuRatio: ratio(ref?.cpu, me?.cpu),
      p50Ratio: ratio(me?.p50, ref?.p50),
      p99Ratio: ratio(me?.p99, ref?.p99),
      rssRatio: ratio(me?.rss, ref?.rss),
    };
  });
}
