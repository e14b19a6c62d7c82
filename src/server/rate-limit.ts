/**
 * Request rate limits: a token bucket per principal and one per (principal, tool), each in this
 * process's memory (no I/O on the hot path). A bucket is a mutable pair in a map; a take reads
 * the clock once and allocates nothing. Client-chosen keys (principals, tool names) cannot grow
 * the maps without bound: past `maxBuckets` the full (idle) buckets are swept, then the oldest.
 */
import { globMatch } from '../registry/glob.js';
import { SharedRate, type GlobalBuckets } from './shared-rate.js';

export type { GlobalBuckets } from './shared-rate.js';

export interface RateRule {
  perSecond: number;
  burst: number;
}

/** What a refusal names: the config key of the bucket, and when to come back. */
export interface RateRefusal {
  limit: string;
  retryAfterMs: number;
}

export interface RateLimitOptions {
  principal?: RateRule;
  tool?: RateRule;
  /** Per-tool overrides; the first glob that matches a tool's name wins. */
  tools?: readonly { glob: string; rule: RateRule }[];
  /** Most buckets kept per map (default 100,000). */
  maxBuckets?: number;
}

/** A tool's bucket rule and the config key that set it. */
interface ToolRule {
  rule: RateRule;
  key: string;
}

interface Bucket {
  tokens: number;
  at: number;
}

const DEFAULT_MAX_BUCKETS = 100_000;
/** The principal of callers nobody authenticated (one bucket for all of them). */
const ANONYMOUS = '';

/** Buckets of one rule, by key. */
class Buckets {
  private readonly map = new Map<string, Bucket>();

  constructor(private readonly maxBuckets: number) {}

  /** Takes one token of `key`'s bucket; returns 0 when allowed, else ms until one is there. */
  take(key: string, rule: RateRule, now: number): number {
    let b = this.map.get(key);
    if (b === undefined) {
      if (this.map.size >= this.maxBuckets) this.sweep(rule, now);
      b = { tokens: rule.burst, at: now };
      this.map.set(key, b);
    } else {
      const refill = ((now - b.at) * rule.perSecond) / 1000;
      b.tokens = Math.min(rule.burst, b.tokens + (refill > 0 ? refill : 0));
      b.at = now;
    }
    if (b.tokens >= 1) {
      b.tokens -= 1;
      return 0;
    }
    return Math.max(1, Math.ceil(((1 - b.tokens) * 1000) / rule.perSecond));
  }

  /** Forgets full buckets (they equal a new one); if none were, the oldest quarter. */
  private sweep(rule: RateRule, now: number): void {
    const full = (rule.burst * 1000) / rule.perSecond;
    for (const [k, b] of this.map) if (now - b.at >= full) this.map.delete(k);
    if (this.map.size < this.maxBuckets) return;
    let drop = Math.ceil(this.maxBuckets / 4);
    for (const k of this.map.keys()) {
      if (drop-- <= 0) break;
      this.map.delete(k);
    }
  }

  get size(): number {
    return this.map.size;
  }
}

export class RateLimiter {
  private readonly principal: RateRule | undefined;
  private readonly tool: RateRule | undefined;
  private readonly overrides: readonly (ToolRule & { glob: string })[];
  private readonly toolDefault: ToolRule | null;
  private readonly byPrincipal: Buckets;
  private readonly byTool: Buckets;
  /** The rule of each tool name seen (overrides resolved once per name, not per call). */
  private readonly ruleOfTool = new Map<string, ToolRule | null>();
  private readonly maxBuckets: number;

  constructor(opts: RateLimitOptions) {
    this.principal = opts.principal;
    this.tool = opts.tool;
    this.overrides = (opts.tools ?? []).map((o) => ({
      glob: o.glob,
      rule: o.rule,
      key: `limits.rate.tools["${o.glob}"]`,
    }));
    this.toolDefault =
      opts.tool === undefined ? null : { rule: opts.tool, key: 'limits.rate.tool' };
    this.maxBuckets = opts.maxBuckets ?? DEFAULT_MAX_BUCKETS;
    this.byPrincipal = new Buckets(this.maxBuckets);
    this.byTool = new Buckets(this.maxBuckets);
  }

  /** `limits.rate.global`: buckets shared by the cluster, consulted beside this process's. */
  private global: SharedRate | undefined;

  /**
   * Makes the limits cluster-wide. The local buckets still decide at once (no I/O on the hot
   * path); what they admit is also taken from the shared buckets in the background
   * (shared-rate.ts), and a shared refusal refuses that key here until the shared bucket has a
   * token again. So a principal gets the configured rate across all processes, give or take the
   * requests admitted during one round trip to the store. A store failure lets requests through
   * (the local bucket still applies).
   */
  shareWith(global: GlobalBuckets): void {
    this.global = new SharedRate(global, this.maxBuckets);
  }

  /** True when some rule limits tools/call per (principal, tool). */
  get limitsSomeTool(): boolean {
    return this.tool !== undefined || this.overrides.length > 0;
  }

  /** True when some rule applies (otherwise the limiter is left out altogether). */
  get active(): boolean {
    return this.principal !== undefined || this.tool !== undefined || this.overrides.length > 0;
  }

  /**
   * Takes a token for one request of `principal` (and of `tool`, for tools/call); undefined when
   * allowed. The tool's bucket is only taken from once the principal's allowed the request.
   */
  take(principal: string | undefined, tool: string | undefined): RateRefusal | undefined {
    const now = performance.now();
    const who = principal ?? ANONYMOUS;
    if (this.principal !== undefined) {
      let wait = this.byPrincipal.take(who, this.principal, now);
      if (wait === 0 && this.global !== undefined)
        wait = this.global.take('rate:p:' + who, this.principal, now);
      if (wait > 0) return { limit: 'limits.rate.principal', retryAfterMs: wait };
    }
    if (tool === undefined) return undefined;
    return this.takeOfTool(who, tool, now);
  }

  /** True when a rule limits calls of `tool` (`limits.rate.tool` or a matching `tools` glob). */
  limitsTool(tool: string): boolean {
    return this.toolRule(tool) !== undefined;
  }

  /**
   * Takes a token of (`principal`, `tool`) only: a call made on the principal's behalf inside
   * one of its requests (an `execute` script's inner call), which its request already counted.
   */
  takeTool(principal: string | undefined, tool: string): RateRefusal | undefined {
    return this.takeOfTool(principal ?? ANONYMOUS, tool, performance.now());
  }

  private takeOfTool(who: string, tool: string, now: number): RateRefusal | undefined {
    const rule = this.toolRule(tool);
    if (rule === undefined) return undefined;
    // The NUL cannot occur in a principal, so (principal, tool) pairs cannot collide.
    const key = who + '\u0000' + tool;
    let wait = this.byTool.take(key, rule.rule, now);
    if (wait === 0 && this.global !== undefined)
      wait = this.global.take('rate:t:' + key, rule.rule, now);
    return wait > 0 ? { limit: rule.key, retryAfterMs: wait } : undefined;
  }

  private toolRule(tool: string): ToolRule | undefined {
    let rule = this.ruleOfTool.get(tool);
    if (rule === undefined) {
      rule = this.toolDefault;
      for (const o of this.overrides)
        if (globMatch(o.glob, tool)) {
          rule = o;
          break;
        }
      // Tool names are the client's: remember a bounded number of them.
      if (this.ruleOfTool.size >= this.maxBuckets) this.ruleOfTool.clear();
      this.ruleOfTool.set(tool, rule);
    }
    return rule ?? undefined;
  }

  /** Buckets held (tests, status). */
  get size(): { principals: number; tools: number } {
    return { principals: this.byPrincipal.size, tools: this.byTool.size };
  }
}
