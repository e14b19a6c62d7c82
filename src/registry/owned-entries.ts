/**
 * A map of registered entries that each name their owner (a plugin), with what the registry
 * does to one owner's entries as a unit: remove them, snapshot them, put them back.
 */
import type { EntryKind } from './types.js';

export interface Owned {
  readonly owner: string;
}

export abstract class OwnedEntries<E extends Owned> {
  protected readonly entries = new Map<string, E>();

  constructor(
    protected readonly kind: EntryKind,
    /** Told of every change, so listeners hear of it (once per batch). */
    protected readonly changed: (kind: EntryKind, owner: string, previous?: string) => void,
  ) {}

  /** The key an entry is stored under (its name, or its URI or template). */
  protected abstract keyOf(entry: E): string;

  get size(): number {
    return this.entries.size;
  }

  /** Removes the entry at `key`; with `owner`, only when that owner holds it. */
  remove(key: string, owner?: string): boolean {
    const entry = this.entries.get(key);
    if (!entry || (owner !== undefined && entry.owner !== owner)) return false;
    this.entries.delete(key);
    this.changed(this.kind, entry.owner);
    return true;
  }

  /** Removes everything `owner` registered; `undefined` removes everything. */
  removeOwner(owner: string | undefined): void {
    for (const [key, entry] of this.entries) {
      if (owner === undefined || entry.owner === owner) {
        this.entries.delete(key);
        this.changed(this.kind, entry.owner);
      }
    }
  }

  ofOwner(owner: string): E[] {
    return [...this.entries.values()].filter((e) => e.owner === owner);
  }

  /** Puts back entries taken by `ofOwner` (after `removeOwner`). */
  restore(entries: readonly E[]): void {
    for (const e of entries) {
      this.entries.set(this.keyOf(e), e);
      this.changed(this.kind, e.owner);
    }
  }

  addOwnersTo(out: Set<string>): void {
    for (const e of this.entries.values()) out.add(e.owner);
  }
}
