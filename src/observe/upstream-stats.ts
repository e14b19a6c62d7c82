/**
 * The proxied-call counter and latency histogram (`moonhub_upstream_calls_total`,
 * `moonhub_upstream_call_duration_seconds`), kept as plain numbers per upstream like the call
 * stats (call-stats.ts): prom-client's labelled `inc`/`observe` hashed their labels on every
 * proxied call, and the upstream's URL was redacted again each time (issue 17's profile of the
 * proxy hop).
 */
import type client from 'prom-client';
import { redactUrl } from '../upstream/status-redact.js';
import {
  LATENCY_BUCKETS,
  family,
  histogramValues,
  observe,
  type Histogram,
  type OutcomeIndex,
} from './call-stats.js';

const OUTCOMES = ['ok', 'tool_error', 'error'] as const;
const HISTOGRAM = 'moonhub_upstream_call_duration_seconds';

interface Series {
  counts: [number, number, number];
  latency: Histogram;
}

export class UpstreamStats {
  /** By the upstream's URL as configured; its label is the redacted URL (made once). */
  private readonly byUrl = new Map<string, Series>();
  /** By redacted URL: two URLs that differ only in a secret share one series. */
  private readonly byLabel = new Map<string, Series>();

  constructor(register: client.Registry) {
    register.registerMetric(
      family(
        'moonhub_upstream_calls_total',
        'Proxied calls to upstream MCP servers by outcome (ok, tool_error, error)',
        'counter',
        () =>
          [...this.byLabel].flatMap(([upstream, s]) =>
            OUTCOMES.map((outcome, i) => ({
              labels: { upstream, outcome },
              value: s.counts[i]!,
            })).filter((v) => v.value > 0),
          ),
      ) as unknown as client.Metric,
    );
    register.registerMetric(
      family(HISTOGRAM, 'Time of a proxied call to an upstream', 'histogram', () =>
        [...this.byLabel.values()]
          .filter((s) => s.latency.count > 0)
          .flatMap((s) => histogramValues(s.latency, HISTOGRAM)),
      ) as unknown as client.Metric,
    );
  }

  record(url: string, outcome: OutcomeIndex, seconds: number): void {
    const s = this.series(url);
    s.counts[outcome]++;
    observe(s.latency, seconds);
  }

  private series(url: string): Series {
    const hit = this.byUrl.get(url);
    if (hit !== undefined) return hit;
    const upstream = redactUrl(url);
    let s = this.byLabel.get(upstream);
    if (s === undefined) {
      s = {
        counts: [0, 0, 0],
        latency: {
          labels: { upstream },
          count: 0,
          sum: 0,
          buckets: new Array<number>(LATENCY_BUCKETS.length + 1).fill(0),
        },
      };
      this.byLabel.set(upstream, s);
    }
    this.byUrl.set(url, s);
    return s;
  }
}
