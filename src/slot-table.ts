/**
 * Values held while a call is in flight, under a slot number the table hands out (the caller
 * keeps it to remove the value). Slots are reused from a free list, so once the table has grown
 * to the most values held at once, adding and removing allocate nothing. IdTable (id-table.ts)
 * keys by the caller's ids: keyed by a counter that only grows, its dictionary of elements was
 * rehashed into a new one every few dozen calls (~110 B a call per table on a proxied call,
 * docs/performance.md, "Session 11"). Like IdTable, and unlike a Map or a Set, no replaced table
 * stays linked to its successor, so nothing outlives its call. The slot list never shrinks: it
 * holds as many slots as values were ever held at once (8 bytes each).
 */
export class SlotTable<V extends object> {
  private readonly items: (V | undefined)[] = [];
  private readonly free: number[] = [];
  private count = 0;

  get size(): number {
    return this.count;
  }

  /** Holds `value`; returns its slot. */
  add(value: V): number {
    this.count++;
    const slot = this.free.pop();
    if (slot === undefined) return this.items.push(value) - 1;
    this.items[slot] = value;
    return slot;
  }

  /**
   * Lets go of `value` held at `slot`; false when it is not there (removed already: the slot may
   * hold another value since, which stays).
   */
  delete(slot: number, value: V): boolean {
    if (this.items[slot] !== value) return false;
    this.items[slot] = undefined;
    this.free.push(slot);
    this.count--;
    return true;
  }

  /** `[slot, value]` pairs, by slot. */
  *entries(): IterableIterator<[number, V]> {
    const items = this.items;
    for (let i = 0; i < items.length; i++) {
      const v = items[i];
      if (v !== undefined) yield [i, v];
    }
  }

  /** The values held, by slot (not in the order they were added). */
  *values(): IterableIterator<V> {
    const items = this.items;
    for (let i = 0; i < items.length; i++) {
      const v = items[i];
      if (v !== undefined) yield v;
    }
  }
}
