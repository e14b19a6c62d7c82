/**
 * The registry's resources: fixed URIs and URI templates, their listed views, and which entry
 * serves a URI (a fixed one first, then the first template that matches, in linear time).
 */
import { byKey, describeResource } from './entry-views.js';
import { RegistryError } from './errors.js';
import { OwnedEntries } from './owned-entries.js';
import type { RegistryEvents } from './registry-events.js';
import { isTemplate, matchParsed, parseTemplate, type UriTemplate } from './uri-template.js';
import type {
  CallContext,
  OwnerFilter,
  ResourceEntry,
  ResourceInfo,
  ResourceReadResult,
  ResourceSpec,
  ResourceTemplateInfo,
} from './types.js';

export class ResourceShelf extends OwnedEntries<ResourceEntry> {
  /** Each template entry taken apart once (a read tries the templates in turn). */
  private readonly parsed = new WeakMap<ResourceEntry, UriTemplate>();

  constructor(private readonly events: RegistryEvents) {
    super('resources', (kind, owner, previous) => events.changed(kind, owner, previous));
  }

  protected keyOf(entry: ResourceEntry): string {
    return entry.uriTemplate;
  }

  add(owner: string, spec: ResourceSpec): void {
    if (!spec.uriTemplate) {
      throw new RegistryError('invalid_definition', 'a resource needs a non-empty URI or template');
    }
    const was = this.entries.get(spec.uriTemplate)?.owner;
    this.entries.set(spec.uriTemplate, {
      ...spec,
      owner,
      isTemplate: isTemplate(spec.uriTemplate),
    });
    this.changed(this.kind, owner, was);
  }

  /** The entry registered under exactly `uriOrTemplate`, if the view shows it. */
  get(uriOrTemplate: string, filter?: OwnerFilter): ResourceEntry | undefined {
    const entry = this.entries.get(uriOrTemplate);
    if (!entry || (filter && !filter(entry.owner))) return undefined;
    return entry;
  }

  listFixed(filter?: OwnerFilter): ResourceInfo[] {
    return [...this.entries.values()]
      .filter((r) => !r.isTemplate && (!filter || filter(r.owner)))
      .sort(byKey((r) => r.uriTemplate))
      .map((r) => describeResource({ uri: r.uriTemplate }, r));
  }

  listTemplates(filter?: OwnerFilter): ResourceTemplateInfo[] {
    return [...this.entries.values()]
      .filter((r) => r.isTemplate && (!filter || filter(r.owner)))
      .sort(byKey((r) => r.uriTemplate))
      .map((r) => describeResource({ uriTemplate: r.uriTemplate }, r));
  }

  count(filter?: OwnerFilter): number {
    let n = 0;
    for (const r of this.entries.values()) if (!filter || filter(r.owner)) n++;
    return n;
  }

  /** Finds the entry serving `uri`: a fixed URI first, then the first template that matches. */
  resolve(
    uri: string,
    filter?: OwnerFilter,
  ): { entry: ResourceEntry; params: Record<string, string> } | undefined {
    const fixed = this.entries.get(uri);
    if (fixed && !fixed.isTemplate && (!filter || filter(fixed.owner))) {
      return { entry: fixed, params: {} };
    }
    for (const entry of this.entries.values()) {
      if (!entry.isTemplate || (filter && !filter(entry.owner))) continue;
      let template = this.parsed.get(entry);
      if (template === undefined) {
        template = parseTemplate(entry.uriTemplate);
        this.parsed.set(entry, template);
      }
      const params = matchParsed(template, uri);
      if (params) return { entry, params };
    }
    return undefined;
  }

  read(uri: string, ctx: CallContext, filter?: OwnerFilter): Promise<ResourceReadResult> {
    const found = this.resolve(uri, filter);
    if (!found) throw new RegistryError('unknown_resource', `Resource not found: ${uri}`);
    const { entry, params } = found;
    const readCtx = { ...ctx, uri };
    return this.events.guarded(entry.owner, 'resource', uri, readCtx, () =>
      entry.handler(uri, params, readCtx),
    );
  }
}
