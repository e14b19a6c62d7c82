/**
 * Per-principal views: which registry entries a principal may see, cached per principal and
 * recomputed when the scoping config, a manifest or the principals themselves change. It also
 * answers the list_changed question per principal: did what this principal sees of a kind
 * actually change since it was last looked at?
 */
import type { Registry } from '../registry/registry.js';
import type { EntryKind, OwnerFilter } from '../registry/types.js';
import {
  EVERYTHING,
  NOTHING,
  filterOf,
  resolveScope,
  type Scope,
  type ScopeSubject,
} from './scope.js';
import type { ScopeSource } from './source.js';

export interface ViewsOptions {
  registry: Registry;
  source: ScopeSource;
  /** The agent and target of a principal; undefined for one that no longer exists (sees nothing). */
  subjectOf: (principal: string) => ScopeSubject | undefined;
  /** Cached principals kept at most (default 10,000); older ones are recomputed on demand. */
  maxCached?: number;
}

interface View {
  generation: number;
  filter: OwnerFilter;
}

/** What a principal saw of one kind when last asked, and whether that was a change. */
interface Seen {
  stamp: string;
  /** The registry's version of the kind then. */
  version: number;
  print: unknown;
  changed: boolean;
}

const KINDS: readonly EntryKind[] = ['tools', 'prompts', 'resources'];
/** The key of the unauthenticated caller (auth none, stdio without a session). */
const ANYONE = '';

export class Views {
  private generation = 0;
  private readonly views = new Map<string, View>();
  private readonly seen = new Map<string, Partial<Record<EntryKind, Seen>>>();
  private readonly listeners = new Set<(kinds: ReadonlySet<EntryKind>) => void>();
  private readonly maxCached: number;
  private readonly unsubscribe: () => void;

  constructor(private readonly opts: ViewsOptions) {
    this.maxCached = opts.maxCached ?? 10_000;
    this.unsubscribe = opts.source.onChange(() => {
      this.generation++;
      this.emit(ALL);
    });
  }

  /** The owner filter of a principal (undefined principal: the unauthenticated caller). */
  filterFor(principal: string | undefined): OwnerFilter {
    return this.view(principal).filter;
  }

  /** Principals changed (a session was revoked, for example): recompute views when next used. */
  invalidate(): void {
    this.generation++;
  }

  /**
   * Whether what `principal` sees of `kind` changed since it was last asked. Every sink of one
   * principal gets the same answer for one change, however many sinks it has.
   */
  viewChanged(principal: string | undefined, kind: EntryKind): boolean {
    const key = principal ?? ANYONE;
    const view = this.view(principal);
    const registry = this.opts.registry;
    const version = registry.versions[kind];
    const stamp = `${version}/${this.generation}`;
    const seen = this.seenOf(key);
    const last = seen[kind];
    if (last?.stamp === stamp) return last.changed;
    const print = this.fingerprint(kind, view.filter);
    // Several changes since the last look (the fan-out coalesces them): the principal may have
    // listed a state between them, so an entry it sees that changed counts even when the list
    // is the same at both looks.
    const changed =
      last === undefined ||
      !samePrint(last.print, print) ||
      (version - last.version > 1 && registry.changedSince(kind, last.version, view.filter));
    seen[kind] = { stamp, version, print, changed };
    return changed;
  }

  /** Views changed without the registry changing: the fan-outs re-check their sinks. */
  onViewChange(listener: (kinds: ReadonlySet<EntryKind>) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  close(): void {
    this.unsubscribe();
    this.listeners.clear();
  }

  private emit(kinds: ReadonlySet<EntryKind>): void {
    for (const listener of this.listeners) listener(kinds);
  }

  private view(principal: string | undefined): View {
    const key = principal ?? ANYONE;
    const cached = this.views.get(key);
    if (cached?.generation === this.generation) return cached;
    const view: View = { generation: this.generation, filter: filterOf(this.resolve(principal)) };
    if (cached === undefined && this.views.size >= this.maxCached) {
      // Map order is insertion order: drop the oldest entry.
      const oldest = this.views.keys().next().value as string;
      this.views.delete(oldest);
      this.seen.delete(oldest);
    }
    this.views.set(key, view);
    if (!this.seen.has(key)) {
      // The baseline the first change is compared with.
      const seen: Partial<Record<EntryKind, Seen>> = {};
      for (const kind of KINDS) {
        seen[kind] = {
          stamp: `${this.opts.registry.versions[kind]}/${this.generation}`,
          version: this.opts.registry.versions[kind],
          print: this.fingerprint(kind, view.filter),
          changed: false,
        };
      }
      this.seen.set(key, seen);
    }
    return view;
  }

  private seenOf(key: string): Partial<Record<EntryKind, Seen>> {
    let seen = this.seen.get(key);
    if (seen === undefined) {
      seen = {};
      this.seen.set(key, seen);
    }
    return seen;
  }

  private resolve(principal: string | undefined): Scope {
    if (principal === undefined) return EVERYTHING;
    const subject = this.opts.subjectOf(principal);
    if (subject === undefined) return NOTHING;
    const { source } = this.opts;
    return resolveScope(source.config, subject, (agent) => source.manifestOf(agent));
  }

  /** What a list shows: tool infos are kept by the registry, so references tell a change. */
  private fingerprint(kind: EntryKind, filter: OwnerFilter): unknown {
    const registry = this.opts.registry;
    switch (kind) {
      case 'tools':
        return registry.listTools(filter);
      case 'prompts':
        return JSON.stringify(registry.listPrompts(filter));
      case 'resources':
        return JSON.stringify([
          registry.listResources(filter),
          registry.listResourceTemplates(filter),
        ]);
    }
  }
}

const ALL: ReadonlySet<EntryKind> = new Set(KINDS);

function samePrint(a: unknown, b: unknown): boolean {
  if (Array.isArray(a) && Array.isArray(b))
    return a.length === b.length && a.every((x, i) => x === b[i]);
  return a === b;
}
