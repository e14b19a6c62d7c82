/**
 * The runs waiting for an `execute` worker, shared fairly between principals. One queue bound
 * (`execute.max_queued`) for all, but a principal flooding it cannot lock the others out: when it
 * is full, a newcomer holding clearly fewer runs than the biggest holder takes the place of that
 * holder's newest run (which is refused instead), and runs leave round-robin across principals,
 * so one principal's 60 waiting runs do not stand in front of another's one. With one principal
 * it is the plain FIFO it replaced.
 *
 * Every operation is O(1): a FIFO per principal (doubly linked, so a cancelled or evicted run
 * leaves from anywhere), a ring of the principals with runs waiting, and the principals grouped
 * by how many runs they hold, so the biggest holder is found without a scan.
 */

/** One waiting run; `item` is the caller's. */
export interface QueueEntry<T> {
  readonly item: T;
  /** Its principal's record; undefined once it left the queue. */
  holder: Holder<T> | undefined;
  prev: QueueEntry<T> | undefined;
  next: QueueEntry<T> | undefined;
}

/** A principal with runs waiting: its FIFO and its place in the ring. */
interface Holder<T> {
  readonly key: string;
  head: QueueEntry<T> | undefined;
  tail: QueueEntry<T> | undefined;
  count: number;
  /** The ring of principals with work (round-robin order). */
  prev: Holder<T> | undefined;
  next: Holder<T> | undefined;
}

/** The key of callers nobody authenticated: one principal, as `limits.http_in_flight_per_principal` counts them. */
const ANONYMOUS = '';

export type Admission<T> =
  { queued: QueueEntry<T>; evicted?: T } | { queued?: undefined; evicted?: undefined };

export class FairQueue<T> {
  private readonly holders = new Map<string, Holder<T>>();
  /** The ring of principals with runs waiting: `first` is served next. */
  private first: Holder<T> | undefined;
  private last: Holder<T> | undefined;
  /** Principals by how many runs they hold (only counts > 0 have a set). */
  private readonly byCount = new Map<number, Set<Holder<T>>>();
  private most = 0;
  private total = 0;

  constructor(private readonly max: number) {}

  get size(): number {
    return this.total;
  }

  /**
   * Queues `item` for `principal` if there is room, or if the biggest holder has at least two
   * runs more than this principal (its newest run is then `evicted`, for the caller to refuse).
   * Two, not one: at one more the newcomer would become the biggest holder and the two would
   * take each other's newest run in turn, refusing runs that had already waited.
   */
  push(principal: string | undefined, item: T): Admission<T> {
    const key = principal ?? ANONYMOUS;
    let evicted: T | undefined;
    if (this.total >= this.max) {
      const own = this.holders.get(key)?.count ?? 0;
      if (this.most < own + 2) return {};
      const victim = this.biggest();
      const newest = victim.tail as QueueEntry<T>;
      this.unlink(newest);
      evicted = newest.item;
    }
    const holder = this.holders.get(key) ?? this.addHolder(key);
    const entry: QueueEntry<T> = { item, holder, prev: holder.tail, next: undefined };
    if (holder.tail) holder.tail.next = entry;
    else holder.head = entry;
    holder.tail = entry;
    this.recount(holder, holder.count + 1);
    this.total++;
    return evicted === undefined ? { queued: entry } : { queued: entry, evicted };
  }

  /** The next run: the oldest of the principal whose turn it is; that principal goes last. */
  shift(): T | undefined {
    const holder = this.first;
    if (holder === undefined) return undefined;
    const entry = holder.head as QueueEntry<T>;
    this.unlink(entry);
    // Still holding runs: to the end of the ring, behind every other principal with work.
    if (holder.count > 0 && holder !== this.last) {
      this.leaveRing(holder);
      this.joinRing(holder);
    }
    return entry.item;
  }

  /** Takes `entry` out (a cancelled run); false when it had already left. */
  remove(entry: QueueEntry<T>): boolean {
    if (entry.holder === undefined) return false;
    this.unlink(entry);
    return true;
  }

  /** Empties the queue, oldest first per principal. */
  drain(): T[] {
    const out: T[] = [];
    for (let item = this.shift(); item !== undefined; item = this.shift()) out.push(item);
    return out;
  }

  /** A principal holding the most runs (the one that reached that count first). */
  private biggest(): Holder<T> {
    return (this.byCount.get(this.most) as Set<Holder<T>>).values().next().value as Holder<T>;
  }

  private addHolder(key: string): Holder<T> {
    const holder: Holder<T> = {
      key,
      head: undefined,
      tail: undefined,
      count: 0,
      prev: undefined,
      next: undefined,
    };
    this.holders.set(key, holder);
    this.joinRing(holder);
    return holder;
  }

  /** Takes `entry` out of its principal's FIFO; a principal left with none leaves the ring. */
  private unlink(entry: QueueEntry<T>): void {
    const holder = entry.holder as Holder<T>;
    if (entry.prev) entry.prev.next = entry.next;
    else holder.head = entry.next;
    if (entry.next) entry.next.prev = entry.prev;
    else holder.tail = entry.prev;
    entry.holder = entry.prev = entry.next = undefined;
    this.total--;
    this.recount(holder, holder.count - 1);
    if (holder.count === 0) {
      this.leaveRing(holder);
      this.holders.delete(holder.key);
    }
  }

  /** Moves `holder` to the group of `count`; the largest count moves by one at most. */
  private recount(holder: Holder<T>, count: number): void {
    const from = this.byCount.get(holder.count);
    if (from !== undefined) {
      from.delete(holder);
      if (from.size === 0) {
        this.byCount.delete(holder.count);
        if (this.most === holder.count) this.most = count > holder.count ? count : holder.count - 1;
      }
    }
    holder.count = count;
    if (count === 0) return;
    const to = this.byCount.get(count);
    if (to) to.add(holder);
    else this.byCount.set(count, new Set([holder]));
    if (count > this.most) this.most = count;
  }

  private joinRing(holder: Holder<T>): void {
    holder.prev = this.last;
    holder.next = undefined;
    if (this.last) this.last.next = holder;
    else this.first = holder;
    this.last = holder;
  }

  private leaveRing(holder: Holder<T>): void {
    if (holder.prev) holder.prev.next = holder.next;
    else this.first = holder.next;
    if (holder.next) holder.next.prev = holder.prev;
    else this.last = holder.prev;
    holder.prev = holder.next = undefined;
  }
}
