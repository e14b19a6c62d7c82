/**
 * The call counters and latency histograms, kept as plain numbers on the hot path (one Map hit
 * and a few increments per call) and turned into Prometheus samples only when scraped. prom-client's
 * own label children re-hash their labels on every increment, which cost more than the rest of
 * the observer together under load.
 */
import type client from 'prom-client';

export const LATENCY_BUCKETS = [
  0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10,
];
const OUTCOMES = ['ok', 'tool_error', 'error'] as const;
export type OutcomeIndex = 0 | 1 | 2;

export interface Histogram {
  labels: Record<string, string>;
  count: number;
  sum: number;
  /** Per bucket (not cumulative), the last one being +Inf. */
  buckets: number[];
}

/**
 * Who made the calls: the client, or an `execute` script on the client's behalf (its inner
 * calls, counted apart so the client's requests keep their meaning).
 */
export type Via = 'client' | 'execute';

/** The series of one (method, tool, plugin, via): a count per outcome and its histograms. */
export interface CallKind {
  method: string;
  tool: string;
  plugin: string;
  via: Via;
  counts: [number, number, number];
  histograms: [Histogram, Histogram, Histogram];
  inflight: { value: number; method: string; via: Via };
}

export type Values = {
  labels: Record<string, string | number>;
  value: number;
  metricName?: string;
}[];

export function family(name: string, help: string, type: string, values: () => Values) {
  return {
    name,
    help,
    type,
    aggregator: 'sum',
    get: () => ({ name, help, type, aggregator: 'sum', values: values() }),
  };
}

/** The tool label of calls past the series bound (`observe.metrics.max_tool_series`). */
export const OVERFLOW_TOOL = 'other';
export const DEFAULT_MAX_TOOL_SERIES = 2000;

export class CallStats {
  private readonly kinds = new Map<string, CallKind>();
  /** Kinds labelled with a tool's name: tools come and go (a reload, an upstream's list, a
   * plugin registering at run time), and a series is kept for ever once made. */
  private toolKinds = 0;
  /** via -> method -> tool -> its latest series: the hot path's lookup, no key string built. */
  private readonly byVia: Record<Via, Map<string, Map<string, CallKind>>> = {
    client: new Map(),
    execute: new Map(),
  };
  private readonly histograms = new Map<string, Histogram>();
  private readonly inflight = new Map<string, CallKind['inflight']>();

  constructor(
    register: client.Registry,
    private readonly maxToolSeries = DEFAULT_MAX_TOOL_SERIES,
  ) {
    register.registerMetric(
      family(
        'moonhub_mcp_calls_total',
        "MCP requests answered, by method, tool or prompt, owning plugin, outcome (ok, tool_error, error) and via (client, or execute for a script's inner calls)",
        'counter',
        () =>
          [...this.kinds.values()].flatMap((k) =>
            OUTCOMES.map((outcome, i) => ({
              labels: { method: k.method, tool: k.tool, plugin: k.plugin, outcome, via: k.via },
              value: k.counts[i]!,
            })).filter((v) => v.value > 0),
          ),
      ) as unknown as client.Metric,
    );
    register.registerMetric(
      family(
        'moonhub_mcp_call_duration_seconds',
        'Time to answer an MCP request, by method, owning plugin, outcome and via',
        'histogram',
        () =>
          [...this.histograms.values()]
            .filter((h) => h.count > 0)
            .flatMap((h) => histogramValues(h)),
      ) as unknown as client.Metric,
    );
    register.registerMetric(
      family('moonhub_mcp_calls_in_flight', 'MCP requests being answered now', 'gauge', () =>
        [...this.inflight.values()].map((g) => ({
          labels: { method: g.method, via: g.via },
          value: g.value,
        })),
      ) as unknown as client.Metric,
    );
  }

  private histogram(method: string, plugin: string, outcome: string, via: Via): Histogram {
    const key = `${method}\n${plugin}\n${outcome}\n${via}`;
    let h = this.histograms.get(key);
    if (h === undefined) {
      h = {
        labels: { method, plugin, outcome, via },
        count: 0,
        sum: 0,
        buckets: new Array<number>(LATENCY_BUCKETS.length + 1).fill(0),
      };
      this.histograms.set(key, h);
    }
    return h;
  }

  /** The series of a call; `plugin` follows from `tool`, unless a reload moved the tool. */
  kind(method: string, tool: string, plugin: string, via: Via = 'client'): CallKind {
    const byMethod = this.byVia[via];
    let byTool = byMethod.get(method);
    if (byTool === undefined) {
      byTool = new Map();
      byMethod.set(method, byTool);
    }
    const hit = byTool.get(tool);
    if (hit !== undefined && hit.plugin === plugin) return hit;
    const methodKey = `${method}\n${via}`;
    const key = `${methodKey}\n${tool}\n${plugin}`;
    let k = this.kinds.get(key);
    if (k === undefined && tool !== '' && tool !== 'unknown' && tool !== OVERFLOW_TOOL) {
      // Past the bound a new tool's calls count under tool="other", and its name is not
      // remembered (no byTool entry either): the series and this map stay bounded.
      if (this.toolKinds >= this.maxToolSeries)
        return this.kind(method, OVERFLOW_TOOL, plugin, via);
      this.toolKinds++;
    }
    if (k === undefined) {
      let inflight = this.inflight.get(methodKey);
      if (inflight === undefined) {
        inflight = { value: 0, method, via };
        this.inflight.set(methodKey, inflight);
      }
      k = {
        method,
        tool,
        plugin,
        via,
        counts: [0, 0, 0],
        histograms: [
          this.histogram(method, plugin, 'ok', via),
          this.histogram(method, plugin, 'tool_error', via),
          this.histogram(method, plugin, 'error', via),
        ],
        inflight,
      };
      this.kinds.set(key, k);
    }
    byTool.set(tool, k);
    return k;
  }

  record(k: CallKind, outcome: OutcomeIndex, seconds: number): void {
    k.counts[outcome]++;
    observe(k.histograms[outcome], seconds);
  }
}

/** One observation into a plain-number histogram. */
export function observe(h: Histogram, seconds: number): void {
  h.count++;
  h.sum += seconds;
  let i = 0;
  while (i < LATENCY_BUCKETS.length && seconds > LATENCY_BUCKETS[i]!) i++;
  h.buckets[i]!++;
}

export function histogramValues(h: Histogram, name = 'moonhub_mcp_call_duration_seconds'): Values {
  const out: Values = [];
  let cumulative = 0;
  for (let i = 0; i <= LATENCY_BUCKETS.length; i++) {
    cumulative += h.buckets[i]!;
    out.push({
      labels: { ...h.labels, le: i < LATENCY_BUCKETS.length ? LATENCY_BUCKETS[i]! : '+Inf' },
      value: cumulative,
      metricName: `${name}_bucket`,
    });
  }
  out.push({ labels: h.labels, value: h.sum, metricName: `${name}_sum` });
  out.push({ labels: h.labels, value: h.count, metricName: `${name}_count` });
  return out;
}
