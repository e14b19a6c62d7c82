/** The registry's prompts: registration, the listed view, and rendering with checked arguments. */
import { byKey } from './entry-views.js';
import { RegistryError } from './errors.js';
import { OwnedEntries } from './owned-entries.js';
import type { RegistryEvents } from './registry-events.js';
import type { CallContext, OwnerFilter, PromptEntry, PromptInfo, PromptResult } from './types.js';

export class PromptShelf extends OwnedEntries<PromptEntry> {
  constructor(private readonly events: RegistryEvents) {
    super('prompts', (kind, owner, previous) => events.changed(kind, owner, previous));
  }

  protected keyOf(entry: PromptEntry): string {
    return entry.name;
  }

  /** Stores `entry`, returning the owner of the prompt it replaced, if any. */
  set(entry: PromptEntry): string | undefined {
    const was = this.entries.get(entry.name)?.owner;
    this.entries.set(entry.name, entry);
    this.changed(this.kind, entry.owner, was);
    return was;
  }

  get(name: string, filter?: OwnerFilter): PromptEntry | undefined {
    const entry = this.entries.get(name);
    if (!entry || (filter && !filter(entry.owner))) return undefined;
    return entry;
  }

  list(filter?: OwnerFilter): PromptInfo[] {
    return [...this.entries.values()]
      .filter((p) => !filter || filter(p.owner))
      .sort(byKey((p) => p.name))
      .map((p) => {
        const info: PromptInfo = {
          name: p.name,
          description: p.description,
          arguments: p.arguments,
        };
        if (p.title !== undefined) info.title = p.title;
        if (p.icons !== undefined) info.icons = p.icons;
        return info;
      });
  }

  count(filter?: OwnerFilter): number {
    if (!filter) return this.entries.size;
    let n = 0;
    for (const p of this.entries.values()) if (filter(p.owner)) n++;
    return n;
  }

  /** Renders a prompt; missing required arguments throw `invalid_arguments`. */
  render(
    name: string,
    args: Record<string, string> | undefined,
    ctx: CallContext,
    filter?: OwnerFilter,
  ): Promise<PromptResult> {
    const entry = this.get(name, filter);
    if (!entry) throw new RegistryError('unknown_prompt', `Unknown prompt: ${name}`);
    const given = args ?? {};
    for (const arg of entry.arguments) {
      if (arg.required && (given[arg.name] === undefined || given[arg.name] === null)) {
        throw new RegistryError(
          'invalid_arguments',
          `Prompt '${name}' needs the argument '${arg.name}'`,
        );
      }
    }
    for (const [key, value] of Object.entries(given)) {
      if (typeof value !== 'string') {
        throw new RegistryError(
          'invalid_arguments',
          `Prompt '${name}': argument '${key}' must be a string`,
        );
      }
    }
    return this.events.guarded(entry.owner, 'prompt', name, ctx, () => entry.handler(given, ctx));
  }
}
