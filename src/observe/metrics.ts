/**
 * The hub's Prometheus metrics (prom-client, in a registry of its own). Calls are counted by the
 * call observer as they end; state (plugins, upstreams, sessions, Lua memory) is read when
 * scraped. Labels are bounded: method names are the protocol's, tool and plugin names are the
 * registry's (an unknown name counts as "unknown"), upstreams are the plugins' configured ones;
 * never session ids, principals or arguments.
 */
import client from 'prom-client';
import type { Registry } from '../registry/registry.js';
import type { CallEnd, CallObserver, CallStart, Outcome } from './call-observer.js';
import { CallStats, type OutcomeIndex } from './call-stats.js';
import { UpstreamStats } from './upstream-stats.js';
import type { UpstreamCallHook } from '../upstream/call-hook.js';
import { redactUrl } from '../upstream/status-redact.js';

/** What metrics read when scraped: the hub's parts, through their status APIs. */
export interface MetricsSources {
  registry: Registry;
  plugins: {
    status(): { name: string; loaded: boolean; error?: unknown }[];
    memoryUsage(): Map<string, number>;
  };
  upstreams: () => {
    url: string;
    owner: string;
    state: string;
    connects: number;
    changed: unknown[];
  }[];
  /** `execute` scripts running and queued; undefined without execute. */
  execute: () =>
    | {
        running: number;
        queued: number;
        workers: number;
        innerCalls?: { direct: number; hub: number };
      }
    | undefined;
  /** 2025 HTTP sessions and those with a GET stream open. */
  legacySessions: () => { sessions: number; streams: number } | undefined;
  /** Open 2026-07-28 `subscriptions/listen` streams (HTTP); undefined without HTTP. */
  listenStreams?: () => number | undefined;
  /** Open TCP connections of the MCP endpoint; undefined without HTTP. */
  connections?: () => number | undefined;
  /** What the held resource subscriptions count (`limits.subscriptions.bytes_*`). */
  subscriptionBytes?: () => number | undefined;
}

const METHODS = new Set([
  'initialize',
  'ping',
  'tools/list',
  'tools/call',
  'prompts/list',
  'prompts/get',
  'resources/list',
  'resources/templates/list',
  'resources/read',
  'resources/subscribe',
  'resources/unsubscribe',
  'completion/complete',
  'logging/setLevel',
  'server/discover',
]);
const OUTCOME_INDEX: Record<Outcome, OutcomeIndex> = { ok: 0, tool_error: 1, error: 2 };

/** HTTP statuses that mean a limit or a check refused the request, by the limit's name. */
export const REFUSAL_BY_STATUS: Record<number, string> = {
  401: 'authentication',
  403: 'scope',
  413: 'body_size',
  429: 'rate',
  503: 'sessions',
};

export class HubMetrics {
  readonly register = new client.Registry();
  private readonly stats: CallStats;
  private readonly reloads: client.Counter<'plugin' | 'outcome'>;
  private readonly refusals: client.Counter<'limit'>;
  private readonly upstreams: UpstreamStats;

  constructor(
    private readonly src: MetricsSources,
    /** Call series labelled with a tool or prompt name (`observe.metrics.max_tool_series`). */
    maxToolSeries?: number,
  ) {
    const register = this.register;
    const r = { registers: [register] };
    client.collectDefaultMetrics({ register, prefix: 'moonhub_' });
    this.stats = new CallStats(register, maxToolSeries);
    this.reloads = new client.Counter({
      name: 'moonhub_plugin_loads_total',
      help: 'Plugin loads and reloads by outcome (loaded, failed)',
      labelNames: ['plugin', 'outcome'],
      ...r,
    });
    this.refusals = new client.Counter({
      name: 'moonhub_limit_refusals_total',
      help: 'Requests refused by a limit or check, by limit (authentication, scope, body_size, rate, sessions, ...)',
      labelNames: ['limit'],
      ...r,
    });
    this.upstreams = new UpstreamStats(register);
    // Gauges read at scrape time from the hub's status APIs, one group per status source.
    this.pluginGauges(r);
    this.upstreamGauges(r);
    this.executeAndSessionGauges(r);
  }

  /** Plugin and registry gauges. */
  private pluginGauges(r: { registers: client.Registry[] }): void {
    const src = this.src;
    new client.Gauge({
      name: 'moonhub_plugin_up',
      help: '1 when the plugin is loaded, 0 when its last load failed',
      labelNames: ['plugin'],
      ...r,
      collect() {
        this.reset();
        for (const p of src.plugins.status()) this.set({ plugin: p.name }, p.loaded ? 1 : 0);
      },
    });
    new client.Gauge({
      name: 'moonhub_plugin_lua_memory_bytes',
      help: "Memory held by each plugin's Lua state",
      labelNames: ['plugin'],
      ...r,
      collect() {
        this.reset();
        for (const [plugin, bytes] of src.plugins.memoryUsage()) this.set({ plugin }, bytes);
      },
    });
    new client.Gauge({
      name: 'moonhub_registry_entries',
      help: 'Tools, prompts and resources the hub serves',
      labelNames: ['kind'],
      ...r,
      collect() {
        this.set({ kind: 'tools' }, src.registry.countTools());
        this.set({ kind: 'prompts' }, src.registry.countPrompts());
        this.set({ kind: 'resources' }, src.registry.countResources());
      },
    });
  }

  /** Per-upstream gauges, labelled by redacted URL and owning plugin. */
  private upstreamGauges(r: { registers: client.Registry[] }): void {
    const src = this.src;
    const upstreamGauge = (name: string, help: string, read: (u: UpstreamRow) => number) =>
      new client.Gauge({
        name,
        help,
        labelNames: ['upstream', 'plugin'],
        ...r,
        collect() {
          this.reset();
          for (const u of src.upstreams())
            this.set({ upstream: redactUrl(u.url), plugin: u.owner }, read(u));
        },
      });
    upstreamGauge('moonhub_upstream_up', '1 while the upstream is connected', (u) =>
      u.state === 'connected' ? 1 : 0,
    );
    upstreamGauge(
      'moonhub_upstream_connects',
      'Connections made to the upstream so far (more than 1: reconnects)',
      (u) => u.connects,
    );
    upstreamGauge(
      'moonhub_upstream_drifted_tools',
      'Imported tools whose upstream definition changed since approval',
      (u) => u.changed.length,
    );
  }

  /** execute-script and session/stream gauges. */
  private executeAndSessionGauges(r: { registers: client.Registry[] }): void {
    const src = this.src;
    new client.Gauge({
      name: 'moonhub_execute_scripts',
      help: 'execute scripts by state: running, queued (waiting for a worker), workers',
      labelNames: ['state'],
      ...r,
      collect() {
        const e = src.execute();
        if (e === undefined) return;
        this.set({ state: 'running' }, e.running);
        this.set({ state: 'queued' }, e.queued);
        this.set({ state: 'workers' }, e.workers);
      },
    });
    new client.Counter({
      name: 'moonhub_execute_inner_calls_total',
      help: 'Tool calls made by execute scripts, by path: direct (script worker to plugin worker) or hub',
      labelNames: ['path'],
      ...r,
      collect() {
        const e = src.execute()?.innerCalls;
        if (e === undefined) return;
        this.reset();
        this.inc({ path: 'direct' }, e.direct);
        this.inc({ path: 'hub' }, e.hub);
      },
    });
    new client.Gauge({
      name: 'moonhub_sessions',
      help: 'Open MCP sessions by protocol era (2026-07-28 requests are stateless: none)',
      labelNames: ['era'],
      ...r,
      collect() {
        this.set({ era: 'legacy' }, src.legacySessions()?.sessions ?? 0);
      },
    });
    new client.Gauge({
      name: 'moonhub_streams',
      help: 'Open server-to-client event streams: 2025 GET streams (legacy), subscriptions/listen (modern)',
      labelNames: ['era'],
      ...r,
      collect() {
        this.set({ era: 'legacy' }, src.legacySessions()?.streams ?? 0);
        this.set({ era: 'modern' }, src.listenStreams?.() ?? 0);
      },
    });
    new client.Gauge({
      name: 'moonhub_http_connections',
      help: 'Open TCP connections of the MCP endpoint (limits.connections.total)',
      ...r,
      collect() {
        this.set(src.connections?.() ?? 0);
      },
    });
    new client.Gauge({
      name: 'moonhub_subscription_bytes',
      help: 'What the held resource subscriptions count, sessions and listen streams (limits.subscriptions.bytes_total)',
      ...r,
      collect() {
        this.set(src.subscriptionBytes?.() ?? 0);
      },
    });
  }

  /** The call observer feeding the call counters and histograms. */
  readonly observer: CallObserver = {
    start: (call: CallStart) => {
      const method = METHODS.has(call.method) ? call.method : 'other';
      let tool = '';
      let plugin = '';
      if (call.name !== undefined && (method === 'tools/call' || method === 'prompts/get')) {
        const entry =
          method === 'tools/call'
            ? this.src.registry.getTool(call.name)
            : this.src.registry.getPromptEntry(call.name);
        tool = entry === undefined ? 'unknown' : call.name;
        plugin = entry?.owner ?? '';
      }
      const kind = this.stats.kind(
        method,
        tool,
        plugin,
        call.transport === 'execute' ? 'execute' : 'client',
      );
      kind.inflight.value++;
      return (end: CallEnd) => {
        kind.inflight.value--;
        this.stats.record(kind, OUTCOME_INDEX[end.outcome], end.durationMs / 1000);
      };
    },
  };

  pluginEvent(e: { type: string; name: string }): void {
    if (e.type === 'loaded' || e.type === 'failed')
      this.reloads.inc({ plugin: e.name, outcome: e.type });
  }

  refused(limit: string, count = 1): void {
    this.refusals.inc({ limit }, count);
  }

  /** Wraps the upstream call hook: counts and times each proxied call. */
  upstreamHook(next: UpstreamCallHook | undefined): UpstreamCallHook {
    return async (info, run) => {
      const t0 = performance.now();
      let outcome: OutcomeIndex = 2;
      try {
        const result = await (next === undefined ? run(undefined) : next(info, run));
        outcome = (result as { isError?: boolean })?.isError === true ? 1 : 0;
        return result;
      } finally {
        this.upstreams.record(info.url, outcome, (performance.now() - t0) / 1000);
      }
    };
  }

  text(): Promise<string> {
    return this.register.metrics();
  }

  get contentType(): string {
    return this.register.contentType;
  }
}

type UpstreamRow = ReturnType<MetricsSources['upstreams']>[number];
