/**
 * The bounds on what one plugin (or `moonhub run` script) may make the hub hold or send: result
 * and error sizes, spawned tasks per call, the size and rate of its log lines, notices and
 * progress messages, its registrations, upstream connections and the bytes under its
 * `/source/tmp/`. The config file's `plugin_limits` section sets them (snake_case there); every
 * refusal names its key. docs/security.md lists them all.
 */
import { BridgeSizeError } from '../lua/bridge.js';
import { PrincipalBuckets } from './principal-buckets.js';
import {
  DEFAULT_UPSTREAM_REQUESTS_IN_FLIGHT,
  DEFAULT_UPSTREAM_REQUESTS_PER_SECOND,
  REQUESTS_IN_FLIGHT_KEY,
  REQUESTS_PER_SECOND_KEY,
} from '../upstream/request-gate.js';
import { DEFAULT_IMPORT_INTERVAL_MS, IMPORT_INTERVAL_KEY } from '../upstream/import-pacer.js';
import { DEFAULT_PIPELINE_DEPTH } from '../upstream/raw-http.js';

export interface PluginLimits {
  /** Bytes a handler's result may take once read from Lua (`result_bytes`). */
  resultBytes: number;
  /** Characters of an error message sent on to a client (`error_bytes`). */
  errorBytes: number;
  /** `task.spawn` calls one handler call (or the plugin's top level) may make (`spawn_per_call`). */
  spawnPerCall: number;
  /** Characters of one log line, notice or progress message (`message_bytes`). */
  messageBytes: number;
  /** Log lines, notices and progress messages per second, per plugin (`messages_per_second`). */
  messagesPerSecond: number;
  /**
   * ... of them one principal's handler calls (and their tasks) may take for their own
   * (`messages_per_second_per_principal`; default a quarter of `messagesPerSecond`, at least 1).
   */
  messagesPerSecondPerPrincipal: number;
  /** Tools, prompts and resources one plugin may register (`registrations`). */
  registrations: number;
  /** Upstream connections (`mcp.proxy`) one plugin may hold (`upstreams`). */
  upstreams: number;
  /** Bytes the plugin's `/source/tmp/` may hold (`write_bytes`). */
  writeBytes: number;
  /** Bytes of one answer of a proxied upstream (`upstream_answer_bytes`): JSON body or one event. */
  upstreamAnswerBytes: number;
  /** Requests to a proxied plain-http upstream written together on one socket (`upstream_pipeline`). */
  upstreamPipeline: number;
  /** Requests a proxied upstream sends the hub (ping, sampling...) taken a second (`upstream_requests_per_second`). */
  upstreamRequestsPerSecond: number;
  /** ... and handled at once, until their answer is sent (`upstream_requests_in_flight`). */
  upstreamRequestsInFlight: number;
  /** Least time between re-imports an upstream's list_changed asks for (`upstream_import_interval_ms`). */
  upstreamImportIntervalMs: number;
  /** `mcp.resource_updated` calls taken per second, per plugin (`resource_updates_per_second`). */
  resourceUpdatesPerSecond: number;
  /**
   * Tool calls (`mcp.call`, `tools.use`, `mcp.call_tool`) one plugin's state may have running
   * (`calls_in_flight`).
   */
  callsInFlight: number;
  /**
   * ... of them one principal's handler calls (and the tasks they spawned) may have running
   * (`calls_in_flight_per_principal`; default a quarter of `callsInFlight`, at least 1).
   */
  callsInFlightPerPrincipal: number;
  /**
   * Wall time of a `task.spawn` task started outside any handler call (at the top level, in
   * such a task or in a callback), which no call's `timeout_ms` covers (`background_task_ms`).
   */
  backgroundTaskMs: number;
  /**
   * A background task that overruns again this soon after the restart its overrun caused stops
   * the plugin instead of restarting it (`task_restart_quiet_ms`; with plugin isolation).
   */
  taskRestartQuietMs: number;
  /**
   * Characters of a tool name the plugin's `mcp.call`, `tools.use` and `mcp.call_tool` may name:
   * the front door's `limits.name_length` (set by the hub, not under `plugin_limits`).
   */
  nameLength: number;
  /**
   * Characters of a URI the plugin's `mcp.read_resource` may name: the front door's
   * `limits.subscriptions.uri_length` (set by the hub).
   */
  uriLength: number;
}

export const DEFAULT_PLUGIN_LIMITS: Readonly<PluginLimits> = {
  resultBytes: 16 * 1024 * 1024,
  errorBytes: 8 * 1024,
  spawnPerCall: 1000,
  messageBytes: 16 * 1024,
  messagesPerSecond: 200,
  messagesPerSecondPerPrincipal: 50,
  registrations: 10_000,
  upstreams: 64,
  writeBytes: 64 * 1024 * 1024,
  upstreamAnswerBytes: 16 * 1024 * 1024,
  upstreamPipeline: DEFAULT_PIPELINE_DEPTH,
  upstreamRequestsPerSecond: DEFAULT_UPSTREAM_REQUESTS_PER_SECOND,
  upstreamRequestsInFlight: DEFAULT_UPSTREAM_REQUESTS_IN_FLIGHT,
  upstreamImportIntervalMs: DEFAULT_IMPORT_INTERVAL_MS,
  resourceUpdatesPerSecond: 1000,
  callsInFlight: 256,
  callsInFlightPerPrincipal: 64,
  backgroundTaskMs: 5000,
  taskRestartQuietMs: 60_000,
  nameLength: 256,
  uriLength: 4096,
};

/** The config key of each limit, for error messages. */
export const PLUGIN_LIMIT_KEYS: Record<keyof PluginLimits, string> = {
  resultBytes: 'plugin_limits.result_bytes',
  errorBytes: 'plugin_limits.error_bytes',
  spawnPerCall: 'plugin_limits.spawn_per_call',
  messageBytes: 'plugin_limits.message_bytes',
  messagesPerSecond: 'plugin_limits.messages_per_second',
  messagesPerSecondPerPrincipal: 'plugin_limits.messages_per_second_per_principal',
  registrations: 'plugin_limits.registrations',
  upstreams: 'plugin_limits.upstreams',
  writeBytes: 'plugin_limits.write_bytes',
  upstreamAnswerBytes: 'plugin_limits.upstream_answer_bytes',
  upstreamPipeline: 'plugin_limits.upstream_pipeline',
  upstreamRequestsPerSecond: REQUESTS_PER_SECOND_KEY,
  upstreamRequestsInFlight: REQUESTS_IN_FLIGHT_KEY,
  upstreamImportIntervalMs: IMPORT_INTERVAL_KEY,
  resourceUpdatesPerSecond: 'plugin_limits.resource_updates_per_second',
  callsInFlight: 'plugin_limits.calls_in_flight',
  callsInFlightPerPrincipal: 'plugin_limits.calls_in_flight_per_principal',
  backgroundTaskMs: 'plugin_limits.background_task_ms',
  taskRestartQuietMs: 'plugin_limits.task_restart_quiet_ms',
  nameLength: 'limits.name_length',
  uriLength: 'limits.subscriptions.uri_length',
};

/**
 * The per-principal share when the config does not set it: a quarter of the plugin's total, so
 * one principal's fan-out leaves three quarters to the others, and at least four principals at
 * their share are needed to fill the plugin (raising the total raises the share with it).
 */
export function defaultPerPrincipal(callsInFlight: number): number {
  return Math.max(1, Math.ceil(callsInFlight / 4));
}

/**
 * Characters of a URI `mcp.resource_updated` takes: `limits.subscriptions.uri_length`'s default,
 * so no subscription can name a longer one unless the operator raised that bound.
 */
export const RESOURCE_UPDATE_URI_LENGTH = 4096;

export function resolvePluginLimits(given: Partial<PluginLimits> = {}): PluginLimits {
  const out = { ...DEFAULT_PLUGIN_LIMITS };
  for (const [k, v] of Object.entries(given)) {
    if (typeof v === 'number') out[k as keyof PluginLimits] = v;
  }
  if (given.callsInFlightPerPrincipal === undefined)
    out.callsInFlightPerPrincipal = defaultPerPrincipal(out.callsInFlight);
  if (given.messagesPerSecondPerPrincipal === undefined)
    out.messagesPerSecondPerPrincipal = defaultPerPrincipal(out.messagesPerSecond);
  return out;
}

/** `text` cut to `max` characters, saying where the cut came from. */
export function capText(text: string, max: number, key: string): string {
  if (text.length <= max) return text;
  return `${text.slice(0, max)}... [truncated: ${text.length} characters, at most ${max} (${key})]`;
}

/**
 * What a failed handler call becomes before it reaches a client: a result over its size bound
 * names the bound, and every message is cut to `errorBytes`.
 */
export function handlerFailure(err: unknown, limits: PluginLimits): Error {
  if (err instanceof BridgeSizeError) {
    return new Error(
      `result too large: ${err.message.replace(/^value too large: /, '')}; a plugin result may take at most ${limits.resultBytes} bytes (${PLUGIN_LIMIT_KEYS.resultBytes})`,
    );
  }
  if (!(err instanceof Error))
    return new Error(capText(String(err), limits.errorBytes, PLUGIN_LIMIT_KEYS.errorBytes));
  if (err.message.length > limits.errorBytes) {
    err.message = capText(err.message, limits.errorBytes, PLUGIN_LIMIT_KEYS.errorBytes);
  }
  return err;
}

/**
 * The per-principal part of a MessageGate: each principal's share of the rate (`rate`, a bucket
 * of its own) and who is sending now (the running handler call's principal, '' for callers
 * nobody authenticated; undefined outside any handler).
 */
export interface MessageShare {
  rate: number;
  principal: () => string | undefined;
}

/** The limit that dropped a message: its label in `moonhub_limit_refusals_total`. */
export type MessageLimit = 'messages_per_second' | 'messages_per_second_per_principal';

/**
 * One plugin's log lines, notices and progress messages: each cut to `messageBytes`, and at most
 * `messagesPerSecond` of them per second (a token bucket); the rest are dropped and counted, and
 * the count is reported once the rate allows again, so a loop cannot flood a client or the log.
 *
 * With a `share`, one principal's flood cannot use up the plugin's rate for the others (as
 * `calls_in_flight_per_principal` does for calls): a message within its principal's own bucket
 * may take any of the plugin's tokens; past it (and the plugin's own messages, outside any
 * handler) only while more than a share's worth of them is left. So a lone principal still gets
 * the whole rate, and the last share's worth stays for principals within theirs.
 */
export class MessageGate {
  private tokens: number;
  private last = performance.now();
  private dropped = 0;
  private readonly buckets: PrincipalBuckets | undefined;

  constructor(
    private readonly limits: Pick<PluginLimits, 'messageBytes' | 'messagesPerSecond'>,
    private readonly onDropped: (count: number) => void,
    private readonly keys: Pick<
      typeof PLUGIN_LIMIT_KEYS,
      'messageBytes' | 'messagesPerSecond'
    > = PLUGIN_LIMIT_KEYS,
    private readonly share?: MessageShare,
    /**
     * Told of each dropped message by the limit that dropped it (its metric label:
     * `messages_per_second`, `messages_per_second_per_principal`); cheap, e.g. a RefusalTally,
     * which reports once per turn.
     */
    private readonly refused?: (limit: string) => void,
  ) {
    this.tokens = limits.messagesPerSecond;
    // A share as large as the rate bounds nothing of its own.
    if (share !== undefined && share.rate < limits.messagesPerSecond)
      this.buckets = new PrincipalBuckets(share.rate);
  }

  /** The message to send (cut if too long), or undefined when it is dropped. */
  admit(text: string): string | undefined {
    const refusal = this.take();
    if (refusal !== undefined) {
      this.dropped++;
      this.refused?.(refusal);
      return undefined;
    }
    if (this.dropped > 0) {
      const n = this.dropped;
      this.dropped = 0;
      this.onDropped(n);
    }
    return capText(text, this.limits.messageBytes, this.keys.messageBytes);
  }

  /**
   * Takes one token of the plugin's rate (and of the sender's share), or names the limit (its
   * metric label) that says it may not.
   */
  private take(): MessageLimit | undefined {
    const rate = this.limits.messagesPerSecond;
    const now = performance.now();
    this.tokens = Math.min(rate, this.tokens + ((now - this.last) / 1000) * rate);
    this.last = now;
    if (this.tokens < 1) return 'messages_per_second';
    if (this.buckets !== undefined) {
      const share = (this.share as MessageShare).rate;
      const who = (this.share as MessageShare).principal();
      const own = who === undefined ? undefined : this.buckets.refill(who, now);
      if (own !== undefined && own.tokens >= 1) own.tokens--;
      // Past its share, or the plugin's own: borrowed, never the last share's worth.
      else if (this.tokens - 1 < share) return 'messages_per_second_per_principal';
    }
    this.tokens--;
    return undefined;
  }

  /**
   * A structured message (`context.log`'s data): one message of the rate; past `messageBytes`
   * of JSON it is replaced by its cut JSON text. undefined when dropped.
   */
  admitValue(value: unknown): unknown {
    if (typeof value === 'string') return this.admit(value);
    if (this.admit('') === undefined) return undefined;
    return this.fitValue(value);
  }

  /** Structured fields of a log line (not a message of their own): cut like admitValue. */
  admitFields(fields: Record<string, unknown>): Record<string, unknown> {
    const fitted = this.fitValue(fields);
    return typeof fitted === 'string' ? { fields: fitted } : fields;
  }

  private fitValue(value: unknown): unknown {
    let json: string;
    try {
      json = JSON.stringify(value) ?? '';
    } catch {
      return value;
    }
    if (json.length <= this.limits.messageBytes) return value;
    return capText(json, this.limits.messageBytes, this.keys.messageBytes);
  }

  /** Messages dropped since the last report. */
  get droppedCount(): number {
    return this.dropped;
  }
}

/** A short description for the one log line about dropped messages. */
export function droppedMessage(
  count: number,
  limits: Pick<PluginLimits, 'messagesPerSecond'> &
    Partial<Pick<PluginLimits, 'messagesPerSecondPerPrincipal'>>,
): string {
  const total = limits.messagesPerSecond;
  const share = limits.messagesPerSecondPerPrincipal ?? total;
  const head = `${count} log/notice/progress message${count === 1 ? '' : 's'} dropped: at most ${total} per second (${PLUGIN_LIMIT_KEYS.messagesPerSecond})`;
  if (share >= total) return head;
  return `${head}; past ${share} a second of one principal's (${PLUGIN_LIMIT_KEYS.messagesPerSecondPerPrincipal}), only while more than ${share} are left for the others`;
}

/**
 * A token bucket of `rate` a second (burst: one second's worth) that counts what it refuses and
 * hands the count to `onDropped` once it admits again (at most once a second): for a plugin's `mcp.resource_updated`,
 * whose every call is work on the hub's thread (and a bus message in the cluster modes).
 */
export class RateGate {
  private tokens: number;
  private last = performance.now();
  private dropped = 0;
  private reported = -Infinity;

  constructor(
    private readonly rate: number,
    private readonly onDropped: (count: number) => void,
  ) {
    this.tokens = rate;
  }

  admit(): boolean {
    const now = performance.now();
    this.tokens = Math.min(this.rate, this.tokens + ((now - this.last) / 1000) * this.rate);
    this.last = now;
    if (this.tokens < 1) {
      this.dropped++;
      return false;
    }
    this.tokens--;
    // At most one report a second: in a loop every admitted call follows a drop.
    if (this.dropped > 0 && now - this.reported >= 1000) {
      const n = this.dropped;
      this.dropped = 0;
      this.reported = now;
      this.onDropped(n);
    }
    return true;
  }
}

/** The log line about dropped resource updates. */
export function droppedUpdates(
  count: number,
  limits: Pick<PluginLimits, 'resourceUpdatesPerSecond'>,
): string {
  return `${count} mcp.resource_updated call${count === 1 ? '' : 's'} dropped: at most ${limits.resourceUpdatesPerSecond} per second (${PLUGIN_LIMIT_KEYS.resourceUpdatesPerSecond})`;
}
