/**
 * The tool calls one Lua state has running, and its bounds on them: `plugin_limits.calls_in_flight`
 * and each principal's share, `calls_in_flight_per_principal`. One count for every path a plugin
 * calls into the registry by (`mcp.call` and `tools.use` through the CallTracker, `mcp.call_tool`,
 * `mcp.get_prompt` and `mcp.read_resource` through the registry bindings, each of which may wait
 * on another plugin's handler or an upstream), so none of them is a way around the bound.
 */

export interface FlightLimits {
  /**
   * Tool calls that may run at once, and the config key that sets it (a plugin's
   * `plugin_limits.calls_in_flight`); unlimited when absent. Spawned tasks are not counted.
   */
  callsInFlight?: { max: number; key: string };
  /**
   * ... of them one principal may have running, and its key (a plugin's
   * `plugin_limits.calls_in_flight_per_principal`). `principal` names whose call starts one: the
   * principal of the handler call whose code runs now ('' for unauthenticated callers, one
   * principal together), or undefined outside any handler (top level, background tasks: the
   * plugin's own calls, which count against `callsInFlight` only).
   */
  callsInFlightPerPrincipal?: { max: number; key: string; principal: () => string | undefined };
  /** Told of each call refused by one of the bounds (and the tracker's), by its metric label. */
  refused?: (limit: string) => void;
}

/** What the refusals call the counted calls. */
const PATHS = 'calls (mcp.call, tools.use, mcp.call_tool, mcp.get_prompt, mcp.read_resource)';

export class CallsInFlight {
  /** Tool calls running. */
  private calls = 0;
  /** Tool calls running per principal; a principal with none has no entry (the map stays small). */
  private readonly byPrincipal = new Map<string, number>();

  constructor(private readonly limits: FlightLimits = {}) {}

  /** Whose share a call started now takes (read at its start: the handler running now). */
  who(): string | undefined {
    return this.limits.callsInFlightPerPrincipal?.principal();
  }

  /**
   * Why a tool call for `who` may not start now, or undefined. A principal past its share may
   * still borrow free places, but never the last `share` of them: those stay for the other
   * principals. So a lone principal (one agent, or every caller of a hub without
   * authentication) keeps most of the total, and one that floods cannot lock the others out.
   * The share first, so a principal refused for it is told of its own bound; a share as large
   * as the total bounds nothing of its own, and the total is named.
   */
  refusal(who: string | undefined): string | undefined {
    const { callsInFlight, callsInFlightPerPrincipal: share } = this.limits;
    const total = callsInFlight?.max ?? Infinity;
    const own = who === undefined ? 0 : (this.byPrincipal.get(who) ?? 0);
    if (
      share !== undefined &&
      share.max < total &&
      own >= share.max &&
      total - this.calls <= share.max
    ) {
      this.limits.refused?.('calls_in_flight_per_principal');
      return `calls in flight limit exceeded: this principal has ${own} ${PATHS} of this plugin running, past its share of ${share.max} (${share.key}), and the plugin's last ${share.max} places are kept for other principals; wait for some with task.await before starting more`;
    }
    if (callsInFlight !== undefined && this.calls >= callsInFlight.max) {
      this.limits.refused?.('calls_in_flight');
      return `calls in flight limit exceeded: at most ${callsInFlight.max} ${PATHS} of this plugin may run at once (${callsInFlight.key}); wait for some with task.await before starting more`;
    }
    return undefined;
  }

  /**
   * `fn` run in a place taken for the principal whose code runs now (read before `fn` starts),
   * given back when it settles; or, when refused, `refused(reason)` and `fn` not run.
   */
  async within<T>(fn: () => Promise<T>, refused: (reason: string) => T): Promise<T> {
    const who = this.who();
    const busy = this.refusal(who);
    if (busy !== undefined) return refused(busy);
    this.enter(who);
    try {
      return await fn();
    } finally {
      this.leave(who);
    }
  }

  /** A call for `who` started (after `refusal` said it may). */
  enter(who: string | undefined): void {
    this.calls++;
    if (who !== undefined) this.byPrincipal.set(who, (this.byPrincipal.get(who) ?? 0) + 1);
  }

  /** ... and ended. */
  leave(who: string | undefined): void {
    this.calls--;
    if (who === undefined) return;
    const n = (this.byPrincipal.get(who) ?? 0) - 1;
    if (n > 0) this.byPrincipal.set(who, n);
    else this.byPrincipal.delete(who);
  }
}
