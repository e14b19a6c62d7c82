/**
 * What each plugin's definitions were warned about (a name no call can reach, a schema pattern
 * the hub does not enforce, a name taken over from another plugin), kept for its status
 * (`hub_status`, the dashboard) beside its load error. A load starts its plugin's list afresh; a
 * failed reload puts the previous one back, as the registry keeps the previous surface. Bounded:
 * a plugin registering thousands of such names keeps the first few and a count, and the log gets
 * each different warning once and at most MAX_LOGGED of them per load: a handler registering
 * definitions with an unenforced pattern in a loop wrote a log line per registration, without end.
 */

/** Warnings kept per plugin; the rest are counted. */
const MAX_KEPT = 20;
/** Warnings of one plugin's load written to the log; the rest are counted in its status. */
export const MAX_LOGGED = 200;

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

  /**
   * A warning about a definition of `owner`: whether to log it ('log'), to log that the rest go
   * unlogged ('last'), or not ('quiet': a repeat, or past MAX_LOGGED). Always 'log' for an owner
   * that is not a plugin being tracked.
   */
  note(owner: string, message: string): 'log' | 'last' | 'quiet' {
    const kept = this.byPlugin.get(owner);
    if (kept === undefined) return 'log';
    if (kept.messages.has(message)) return 'quiet';
    if (kept.messages.size < MAX_KEPT) {
      kept.messages.add(message);
      return 'log';
    }
    kept.more++;
    const logged = MAX_KEPT + kept.more;
    return logged < MAX_LOGGED ? 'log' : logged === MAX_LOGGED ? 'last' : 'quiet';
  }

  forget(plugin: string): void {
    this.byPlugin.delete(plugin);
  }

  /** The plugin's warnings as its status shows them; undefined when there are none. */
  of(plugin: string): string[] | undefined {
    const kept = this.byPlugin.get(plugin);
    if (kept === undefined || kept.messages.size === 0) return undefined;
    const out = [...kept.messages];
    if (kept.more > 0)
      out.push(
        `... and ${kept.more} more (the hub's log has the first ${MAX_LOGGED} of this load)`,
      );
    return out;
  }
}
