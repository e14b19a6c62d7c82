/**
 * What each plugin's definitions were warned about (a name no call can reach, a schema pattern
 * the hub does not enforce, a name taken over from another plugin), kept for its status
 * (`hub_status`, the dashboard) beside its load error. A load starts its plugin's list afresh; a
 * failed reload puts the previous one back, as the registry keeps the previous surface. Bounded:
 * a plugin registering thousands of such names keeps the first few and a count.
 */

/** Warnings kept per plugin; the rest are counted (every one is in the log). */
const MAX_KEPT = 20;

interface Kept {
  messages: Set<string>;
  more: number;
}

export class PluginWarnings {
  private readonly byPlugin = new Map<string, Kept>();
  /** The lists of plugins being loaded, as they were before (put back if the load fails). */
  private readonly before = new Map<string, Kept | undefined>();

  /** A load of `plugin` begins: its list starts empty. */
  begin(plugin: string): void {
    this.before.set(plugin, this.byPlugin.get(plugin));
    this.byPlugin.set(plugin, { messages: new Set(), more: 0 });
  }

  /** The load succeeded: the new list stays. */
  loaded(plugin: string): void {
    this.before.delete(plugin);
  }

  /** The load failed and the previous surface stays: so do its warnings. */
  failed(plugin: string): void {
    if (!this.before.has(plugin)) return;
    const previous = this.before.get(plugin);
    this.before.delete(plugin);
    if (previous === undefined) this.byPlugin.delete(plugin);
    else this.byPlugin.set(plugin, previous);
  }

  /** A warning about a definition of `owner` (ignored unless `owner` is a plugin). */
  note(owner: string, message: string): void {
    const kept = this.byPlugin.get(owner);
    if (kept === undefined || kept.messages.has(message)) return;
    if (kept.messages.size < MAX_KEPT) kept.messages.add(message);
    else kept.more++;
  }

  forget(plugin: string): void {
    this.byPlugin.delete(plugin);
  }

  /** The plugin's warnings as its status shows them; undefined when there are none. */
  of(plugin: string): string[] | undefined {
    const kept = this.byPlugin.get(plugin);
    if (kept === undefined || kept.messages.size === 0) return undefined;
    const out = [...kept.messages];
    if (kept.more > 0) out.push(`... and ${kept.more} more (see the hub's log)`);
    return out;
  }
}
