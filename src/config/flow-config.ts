/**
 * The config file's flow bounds (`limits.streams`, `limits.notices`, `limits.rate`), in the
 * file's snake_case, turned into the camelCase settings the server takes (src/server/flow-limits.ts,
 * which config/ does not import: the compiler checks the shape where the CLI hands it over).
 */

/** A token bucket as the file gives it: tokens per second and the most saved up. */
export interface RateRuleConfig {
  per_second: number;
  burst?: number;
}

/** `limits.streams`, `limits.notices` and `limits.rate` in the config file. */
export interface FlowLimitsConfig {
  streams?: {
    buffer_bytes?: number;
    stdio_buffer_bytes?: number;
    parked_bytes_per_principal?: number;
    parked_bytes_total?: number;
  };
  notices?: {
    message_bytes?: number;
    per_second?: number;
    burst?: number;
    list_changed_interval_ms?: number;
  };
  rate?: {
    principal?: RateRuleConfig;
    tool?: RateRuleConfig;
    /** Per-tool overrides by name or glob (`*`, `?`); the first match in file order wins. */
    tools?: Record<string, RateRuleConfig>;
    /** With a cluster (Redis or --workers): the buckets are shared by every process. */
    global?: boolean;
  };
}

export interface RateRule {
  perSecond: number;
  burst: number;
}

/** The flow bounds the server takes; absent fields keep their defaults. */
export interface FlowSettings {
  streamBufferBytes?: number;
  stdioBufferBytes?: number;
  parkedBytesPerPrincipal?: number;
  parkedBytesTotal?: number;
  noticeBytes?: number;
  noticesPerSecond?: number;
  noticeBurst?: number;
  listChangedIntervalMs?: number;
  ratePrincipal?: RateRule;
  rateTool?: RateRule;
  rateTools?: { glob: string; rule: RateRule }[];
  rateGlobal?: boolean;
}

/** A rule's burst defaults to one second's worth (at least one token). */
function ruleOf(r: RateRuleConfig | undefined): RateRule | undefined {
  if (r === undefined) return undefined;
  return { perSecond: r.per_second, burst: r.burst ?? Math.max(1, Math.ceil(r.per_second)) };
}

/** The settings from the file's `limits` section (already checked against the schema). */
export function flowSettingsOf(section: FlowLimitsConfig | undefined): FlowSettings {
  const out: FlowSettings = {};
  if (section === undefined) return out;
  const { streams, notices, rate } = section;
  if (streams?.buffer_bytes !== undefined) out.streamBufferBytes = streams.buffer_bytes;
  if (streams?.stdio_buffer_bytes !== undefined) out.stdioBufferBytes = streams.stdio_buffer_bytes;
  if (streams?.parked_bytes_per_principal !== undefined)
    out.parkedBytesPerPrincipal = streams.parked_bytes_per_principal;
  if (streams?.parked_bytes_total !== undefined) out.parkedBytesTotal = streams.parked_bytes_total;
  if (notices?.message_bytes !== undefined) out.noticeBytes = notices.message_bytes;
  if (notices?.per_second !== undefined) out.noticesPerSecond = notices.per_second;
  if (notices?.burst !== undefined) out.noticeBurst = notices.burst;
  if (notices?.list_changed_interval_ms !== undefined)
    out.listChangedIntervalMs = notices.list_changed_interval_ms;
  const principal = ruleOf(rate?.principal);
  if (principal !== undefined) out.ratePrincipal = principal;
  const tool = ruleOf(rate?.tool);
  if (tool !== undefined) out.rateTool = tool;
  if (rate?.tools !== undefined)
    out.rateTools = Object.entries(rate.tools).map(([glob, r]) => ({ glob, rule: ruleOf(r)! }));
  if (rate?.global === true) out.rateGlobal = true;
  return out;
}
