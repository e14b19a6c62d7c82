/**
 * Serialised pages of the list methods (tools/list, prompts/list, resources/list,
 * resources/templates/list), kept per view, era and cursor, and valid for one registry version
 * of their kind. Building, filtering, paginating and serialising a page of 100 tool definitions
 * is most of what a list request costs with big catalogues; a cached page costs the splice of
 * its JSON-RPC id.
 *
 * A view is its owner filter: the views layer hands out one filter function per principal and
 * view generation, so a changed view is a new key and can never hit another view's page. Every
 * registry change (the event that drives `list_changed`) empties the cache; each page also
 * carries the version it was built at, for changes made inside a registry batch (whose event
 * comes at the batch's end). The cache is bounded in bytes: past the bound it starts over.
 */
import type { Registry } from '../registry/registry.js';
import type { EntryKind } from '../registry/types.js';
import type { OwnerFilter } from '../registry/types.js';

/** Default bound of the cached pages' JSON (`performance.list_cache_bytes`): 8 MiB. */
export const DEFAULT_LIST_CACHE_BYTES = 8 * 1024 * 1024;

/** The list methods and the registry kind each one shows. */
export const LIST_METHOD_KINDS: ReadonlyMap<string, EntryKind> = new Map<string, EntryKind>([
  ['tools/list', 'tools'],
  ['prompts/list', 'prompts'],
  ['resources/list', 'resources'],
  ['resources/templates/list', 'resources'],
]);

interface Page {
  version: number;
  /** The JSON of the `result` member, exactly as answered. */
  json: string;
}

/** Stands for "no filter" (the whole registry) as a Map key. */
const ALL = (): boolean => true;

export class ListCache {
  private readonly views = new Map<NonNullable<OwnerFilter>, Map<string, Page>>();
  private bytes = 0;
  private readonly unsubscribe: () => void;

  constructor(
    private readonly registry: Registry,
    private readonly maxBytes: number,
  ) {
    this.unsubscribe = registry.onChange(() => this.clear());
  }

  /** The cached `result` JSON of this page, if it is still the registry's. */
  get(method: string, filter: OwnerFilter, era: string, cursor: unknown): string | undefined {
    const kind = LIST_METHOD_KINDS.get(method);
    if (kind === undefined || (cursor !== undefined && typeof cursor !== 'string')) return;
    const page = this.views.get(filter ?? ALL)?.get(keyOf(method, era, cursor));
    return page?.version === this.registry.versions[kind] ? page.json : undefined;
  }

  /**
   * Keeps a page answered at `version` (read before the handler ran, so a page built across a
   * change is filed under the older version and never served for the newer one).
   */
  set(
    method: string,
    filter: OwnerFilter,
    era: string,
    cursor: unknown,
    version: number,
    json: string,
  ): void {
    if (this.maxBytes <= 0 || (cursor !== undefined && typeof cursor !== 'string')) return;
    const key = keyOf(method, era, cursor);
    const size = json.length + key.length;
    if (size > this.maxBytes) return;
    if (this.bytes + size > this.maxBytes) this.clear();
    let pages = this.views.get(filter ?? ALL);
    if (pages === undefined) this.views.set(filter ?? ALL, (pages = new Map()));
    const old = pages.get(key);
    if (old !== undefined) this.bytes -= old.json.length + key.length;
    pages.set(key, { version, json });
    this.bytes += size;
  }

  /** The registry version a page of `method` would be built at now. */
  versionOf(method: string): number | undefined {
    const kind = LIST_METHOD_KINDS.get(method);
    return kind === undefined ? undefined : this.registry.versions[kind];
  }

  /** Bytes held (for tests and the docs' figures). */
  get size(): number {
    return this.bytes;
  }

  clear(): void {
    this.views.clear();
    this.bytes = 0;
  }

  close(): void {
    this.unsubscribe();
    this.clear();
  }
}

function keyOf(method: string, era: string, cursor: string | undefined): string {
  return cursor === undefined ? `${method} ${era}` : `${method} ${era} ${cursor}`;
}
