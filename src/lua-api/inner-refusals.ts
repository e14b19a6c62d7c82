/**
 * Refusals of the calls a Lua state makes by name (`mcp.call`, `tools.use`, `mcp.call_tool`, an
 * `execute` script's inner calls): the front door's tool-name bound applied to them, and a tally
 * that hands the hub's refusal counter (`moonhub_limit_refusals_total`) one report per limit and
 * event-loop turn, so a loop of refused calls costs one message to the hub's thread, not one each.
 */
import { wireError, type WireError } from '../errors.js';

/** The front door's default `limits.name_length` (src/server/session-limits.ts). */
export const DEFAULT_NAME_LENGTH = 256;

/**
 * The refusal of an inner call naming a tool (or `what`, bounded by `key`) longer than `max`: the
 * front door's own error
 * (`name_too_long`, naming the key, not echoing the name), or undefined. Checked before the name
 * reaches anything that keeps it: the (principal, tool) rate buckets, the observers (audit log,
 * dashboard), a message to the hub's thread.
 */
export function innerNameRefusal(
  name: string,
  max: number,
  what = 'a tool name',
  key = 'limits.name_length',
): WireError | undefined {
  if (name.length <= max) return undefined;
  return wireError('name_too_long', { what, max, key, length: name.length });
}

/** Told how many refusals of one limit (its label in the metric, e.g. `name_length`) happened. */
export type RefusalReport = (limit: string, count: number) => void;

/** Counts refusals and reports them once per event-loop turn. */
export class RefusalTally {
  private readonly counts = new Map<string, number>();
  private scheduled = false;

  constructor(private readonly report: RefusalReport) {}

  count(limit: string): void {
    this.counts.set(limit, (this.counts.get(limit) ?? 0) + 1);
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => this.flush());
  }

  private flush(): void {
    this.scheduled = false;
    for (const [limit, n] of this.counts) this.report(limit, n);
    this.counts.clear();
  }
}
