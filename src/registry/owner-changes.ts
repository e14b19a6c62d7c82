/**
 * Which owners' entries changed, per kind, at which registry version: lets a per-principal
 * list_changed check tell whether an entry the principal sees changed between two looks, even
 * when its list is the same at both (a tool added and removed again: the fan-out coalesces, and
 * the principal may have listed the state between).
 */
import type { EntryKind, OwnerFilter } from './types.js';

/** Owners remembered per kind; past it the oldest go, and older questions answer "changed". */
const MAX_OWNERS = 1024;

export class OwnerChanges {
  /** Per kind, the version of each owner's last change (Map order: oldest change first). */
  private readonly last: Record<EntryKind, Map<string, number>> = {
    tools: new Map(),
    prompts: new Map(),
    resources: new Map(),
  };
  /** Per kind, changes at or before this version are no longer known owner by owner. */
  private readonly floor: Record<EntryKind, number> = { tools: 0, prompts: 0, resources: 0 };

  /** `owner` (and `previous`, the owner an entry was taken from) changed `kind` at `version`. */
  record(kind: EntryKind, version: number, owner?: string, previous?: string): void {
    if (owner === undefined) {
      // Not known whose: every question about it answers "changed".
      this.floor[kind] = version;
      return;
    }
    this.touch(kind, version, owner);
    if (previous !== undefined && previous !== owner) this.touch(kind, version, previous);
  }

  /**
   * Whether an entry of `kind` whose owner passes `filter` (undefined: every owner) changed
   * after `version`; true when that is no longer known.
   */
  since(kind: EntryKind, version: number, filter: OwnerFilter | undefined): boolean {
    if (version < this.floor[kind]) return true;
    for (const [owner, at] of this.last[kind]) {
      if (at > version && (filter === undefined || filter(owner))) return true;
    }
    return false;
  }

  private touch(kind: EntryKind, version: number, owner: string): void {
    const last = this.last[kind];
    last.delete(owner);
    last.set(owner, version);
    if (last.size > MAX_OWNERS) {
      const [oldest, at] = last.entries().next().value as [string, number];
      last.delete(oldest);
      this.floor[kind] = Math.max(this.floor[kind], at);
    }
  }
}
