/**
 * What resumable streams may keep while no client is connected to them (SEP-1699 "parked"
 * streams, `resumable.ts`), per principal and in all (`limits.streams.parked_bytes_*`). A parked
 * stream costs its client nothing to hold, so without this a client that opened calls and dropped
 * their connections kept up to `limits.streams.buffer_bytes` of events per call, 64 calls per
 * session, for as many sessions as it may open. Past a bound the oldest parked stream of that
 * principal (or, past the total, of anybody) is forgotten: its events go and its call, whose
 * answer nobody can fetch any more, is aborted.
 */

/** Characters a parked stream counts besides its events: its objects and the call behind it. */
export const PARKED_STREAM_OVERHEAD = 1024;
export const DEFAULT_PARKED_BYTES_PER_PRINCIPAL = 64 * 1024 * 1024;
export const DEFAULT_PARKED_BYTES_TOTAL = 256 * 1024 * 1024;

/** A stream the budget can count and forget. */
export interface Parkable {
  /** Characters of the events it keeps. */
  readonly keptChars: number;
  /** Whom its session belongs to ('' when nobody in particular). */
  readonly principal: string;
  /** Forgets the stream: its events go, its call is aborted (`limit` names the bound). */
  lose(limit: string): void;
}

interface Holder {
  chars: number;
  /** In the order they were parked: the first is the oldest. */
  readonly streams: Set<Parkable>;
}

export class ParkedBudget {
  /** Every parked stream and what it counts, oldest first. */
  private readonly charges = new Map<Parkable, number>();
  private readonly holders = new Map<string, Holder>();
  private total = 0;

  constructor(
    readonly maxPerPrincipal = DEFAULT_PARKED_BYTES_PER_PRINCIPAL,
    readonly maxTotal = DEFAULT_PARKED_BYTES_TOTAL,
    /** Counts each stream forgotten for a bound (metrics: `parked_streams`). */
    private readonly refused?: () => void,
  ) {}

  /** Characters parked streams count now (tests, metrics). */
  get chars(): number {
    return this.total;
  }

  /** A stream parked, or a parked one kept another event: counts it, then makes room. */
  charge(stream: Parkable): void {
    const now = stream.keptChars + PARKED_STREAM_OVERHEAD;
    const was = this.charges.get(stream);
    let holder = this.holders.get(stream.principal);
    if (holder === undefined) {
      holder = { chars: 0, streams: new Set() };
      this.holders.set(stream.principal, holder);
    }
    this.charges.set(stream, now);
    holder.streams.add(stream);
    holder.chars += now - (was ?? 0);
    this.total += now - (was ?? 0);
    // The principal's own oldest go first; only past the total does anybody's.
    while (holder.chars > this.maxPerPrincipal && holder.streams.size > 0)
      this.evict(
        holder.streams.values().next().value!,
        'limits.streams.parked_bytes_per_principal',
      );
    while (this.total > this.maxTotal && this.charges.size > 0)
      this.evict(this.charges.keys().next().value!, 'limits.streams.parked_bytes_total');
  }

  /** A stream is no longer parked (resumed, delivered, forgotten, its session ended). */
  release(stream: Parkable): void {
    const was = this.charges.get(stream);
    if (was === undefined) return;
    this.charges.delete(stream);
    this.total -= was;
    const holder = this.holders.get(stream.principal)!;
    holder.streams.delete(stream);
    holder.chars -= was;
    if (holder.streams.size === 0) this.holders.delete(stream.principal);
  }

  private evict(stream: Parkable, limit: string): void {
    this.release(stream);
    this.refused?.();
    stream.lose(limit);
  }
}
