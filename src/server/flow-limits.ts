/**
 * The flow bounds of one server (issue 12, item 2): how much a stream may hold for a client that
 * does not read, how large and how frequent the log, notice and progress messages of a call may
 * be, and the request rate limits. One object, made from the config's `limits` section and shared
 * by the transports and the dispatcher; `refused` counts each refusal by limit (metrics).
 */
import { ParkedBudget } from './parked-budget.js';
import { RateLimiter, type RateRefusal, type RateRule } from './rate-limit.js';

/** Bytes one event stream may hold for a client that does not read (`limits.streams.buffer_bytes`). */
export const DEFAULT_STREAM_BUFFER_BYTES = 4 * 1024 * 1024;
/** Bytes the stdio output may hold in all before the peer is dropped. */
export const DEFAULT_STDIO_BUFFER_BYTES = 64 * 1024 * 1024;
/** Bytes of one notifications/message or notifications/progress. */
export const DEFAULT_NOTICE_BYTES = 64 * 1024;
export const DEFAULT_NOTICES_PER_SECOND = 100;
export const DEFAULT_NOTICE_BURST = 200;
/** The shortest time between two list_changed deliveries of a transport (coalescing window). */
export const DEFAULT_LIST_CHANGED_INTERVAL_MS = 100;

export interface FlowOptions {
  streamBufferBytes?: number;
  stdioBufferBytes?: number;
  /** Characters resumable streams without a client may keep, per principal and in all. */
  parkedBytesPerPrincipal?: number;
  parkedBytesTotal?: number;
  noticeBytes?: number;
  noticesPerSecond?: number;
  noticeBurst?: number;
  listChangedIntervalMs?: number;
  ratePrincipal?: RateRule;
  rateTool?: RateRule;
  rateTools?: readonly { glob: string; rule: RateRule }[];
  /** `limits.rate.global`: use the cluster's shared buckets too (see RateLimiter.shareWith). */
  rateGlobal?: boolean;
}

/** Per-tool rate limits for calls made on a principal's behalf (see FlowLimits.toolGate). */
export interface ToolRateGate {
  /** True when some rule limits `tool`. */
  limits(tool: string): boolean;
  /** Takes a token of (`principal`, `tool`): the refusal, or undefined. */
  take(principal: string | undefined, tool: string): RateRefusal | undefined;
}

/** The names refusals are counted under (`moonhub_limit_refusals_total{limit}`). */
export type FlowRefusal =
  'stream_buffer' | 'parked_streams' | 'notice_size' | 'notice_rate' | 'rate';

export class FlowLimits {
  readonly streamBufferBytes: number;
  readonly stdioBufferBytes: number;
  /** What resumable streams no client is connected to may keep (limits.streams.parked_bytes_*). */
  readonly parked: ParkedBudget;
  readonly noticeBytes: number;
  readonly noticesPerSecond: number;
  readonly noticeBurst: number;
  /** `limits.notices.list_changed_interval_ms` (list-changed.ts). */
  readonly listChangedIntervalMs: number;
  /** Undefined when no rate limit is configured: the hot path then checks one field. */
  readonly rate: RateLimiter | undefined;
  /** Counts a refusal (set by the operations layer when metrics are on). */
  refused: ((limit: FlowRefusal) => void) | undefined = undefined;

  constructor(opts: FlowOptions = {}) {
    this.streamBufferBytes = opts.streamBufferBytes ?? DEFAULT_STREAM_BUFFER_BYTES;
    this.stdioBufferBytes = opts.stdioBufferBytes ?? DEFAULT_STDIO_BUFFER_BYTES;
    this.parked = new ParkedBudget(opts.parkedBytesPerPrincipal, opts.parkedBytesTotal, () =>
      this.refused?.('parked_streams'),
    );
    this.noticeBytes = opts.noticeBytes ?? DEFAULT_NOTICE_BYTES;
    this.noticesPerSecond = opts.noticesPerSecond ?? DEFAULT_NOTICES_PER_SECOND;
    this.noticeBurst = opts.noticeBurst ?? DEFAULT_NOTICE_BURST;
    this.listChangedIntervalMs = opts.listChangedIntervalMs ?? DEFAULT_LIST_CHANGED_INTERVAL_MS;
    const rate = new RateLimiter({
      principal: opts.ratePrincipal,
      tool: opts.rateTool,
      tools: opts.rateTools,
    });
    this.rate = rate.active ? rate : undefined;
  }

  /**
   * The per-tool limits (`limits.rate.tool`, `limits.rate.tools`) as a gate for calls made inside
   * a request on its principal's behalf (an `execute` script's inner calls); undefined when no
   * tool is limited. Each inner call takes a token of (principal, tool) like a client's call.
   */
  toolGate(): ToolRateGate | undefined {
    const rate = this.rate;
    if (rate === undefined || !rate.limitsSomeTool) return undefined;
    return {
      limits: (tool) => rate.limitsTool(tool),
      take: (principal, tool) => {
        const refusal = rate.takeTool(principal, tool);
        if (refusal !== undefined) this.refused?.('rate');
        return refusal;
      },
    };
  }

  /** Takes a token for one request; the refusal (counted) when a bucket is empty. */
  takeRate(principal: string | undefined, tool: string | undefined): RateRefusal | undefined {
    const refusal = this.rate?.take(principal, tool);
    if (refusal !== undefined) this.refused?.('rate');
    return refusal;
  }
}
