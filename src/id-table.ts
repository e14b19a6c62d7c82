/**
 * Values by integer id, for entries that come and go at the request rate and hold a request
 * (calls in flight). Not a Map or a Set: V8 links each hash table a Map or Set outgrows to its
 * successor, and the old table keeps the entries it had. Once one such table has reached the old
 * generation, each successor stays alive through the young generation's collections (the dead
 * old table points to it), is promoted, and pins the next one: every request that was in flight
 * when a table was replaced went to the old generation with its whole body and HTTP objects.
 * The hub's thread spent ~15 % of its time in scavenges this way, on and off from run to run
 * (docs/performance.md, "Session 9"). An object in dictionary mode drops a replaced table
 * without linking it, so nothing outlives its call.
 */
/** A JSON-RPC id (or any id): a number that is an array index stays one; others are tagged. */
type Id = number | string;
const MAX_INDEX = 2 ** 32 - 2;

function slotOf(id: Id): number | string {
  if (typeof id === 'number' && Number.isInteger(id) && id >= 0 && id <= MAX_INDEX) return id;
  return (typeof id === 'number' ? 'n' : 's') + id;
}

function idOf(slot: string): Id {
  const tag = slot.charCodeAt(0);
  if (tag === 115 /* s */) return slot.slice(1);
  return Number(tag === 110 /* n */ ? slot.slice(1) : slot);
}

export class IdTable<V extends object, K extends Id = Id> {
  private readonly bySlot: Record<number | string, V> = Object.create(null) as Record<
    number | string,
    V
  >;
  private count = 0;

  get size(): number {
    return this.count;
  }

  get(id: K): V | undefined {
    return this.bySlot[slotOf(id)];
  }

  has(id: K): boolean {
    return this.bySlot[slotOf(id)] !== undefined;
  }

  set(id: K, value: V): this {
    const slot = slotOf(id);
    if (this.bySlot[slot] === undefined) this.count++;
    this.bySlot[slot] = value;
    return this;
  }

  delete(id: K): boolean {
    const slot = slotOf(id);
    if (this.bySlot[slot] === undefined) return false;
    delete this.bySlot[slot];
    this.count--;
    return true;
  }

  clear(): void {
    for (const slot in this.bySlot) delete this.bySlot[slot];
    this.count = 0;
  }

  /** `[id, value]` pairs: array-index ids first, ascending, then the others as added. */
  *[Symbol.iterator](): IterableIterator<[K, V]> {
    for (const slot in this.bySlot) yield [idOf(slot) as K, this.bySlot[slot]!];
  }

  *values(): IterableIterator<V> {
    for (const slot in this.bySlot) yield this.bySlot[slot]!;
  }
}
