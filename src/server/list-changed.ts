/**
 * list_changed fan-out: one registry listener that tells every open notification channel (2025
 * session GET streams, 2026 `subscriptions/listen` streams, the stdio peer) which lists changed.
 *
 * Coalesced: the first change after a quiet spell goes out at once, and the changes of the next
 * `limits.notices.list_changed_interval_ms` go out together at its end (one notification per
 * kind and channel), so a plugin registering and removing in a loop costs each channel a few
 * writes a second, not one per change. Nothing is lost: a change always has a notification
 * sent at or after it, so a client that refetches a list on the last one sees the final list.
 */
import type { Registry } from '../registry/registry.js';
import type { EntryKind } from '../registry/types.js';
import { DEFAULT_LIST_CHANGED_INTERVAL_MS } from './flow-limits.js';

export const LIST_CHANGED_METHOD: Readonly<Record<EntryKind, string>> = {
  tools: 'notifications/tools/list_changed',
  prompts: 'notifications/prompts/list_changed',
  resources: 'notifications/resources/list_changed',
};

/** One channel that wants list_changed notifications. */
export interface ChangeSink {
  /** The kinds this channel asked for. */
  readonly kinds: ReadonlySet<EntryKind>;
  /** Who is on the other end, for the per-principal hook (undefined until auth exists). */
  readonly principal?: string | undefined;
  /** The 2025 session id, when there is one. */
  readonly sessionId?: string | undefined;
  /** Writes the notification for one changed kind. */
  deliver(kind: EntryKind): void;
}

export interface FanoutOptions {
  /**
   * Per-principal hook: whether `kind` changed in the view this sink sees. Default: always.
   * A scoped view compares its cached entries (per principal and registry version) here.
   */
  viewChanged?: (sink: ChangeSink, kind: EntryKind) => boolean;
  /**
   * Changes of views that the registry does not see (a manifest edit, say): subscribe to them
   * and publish them like registry changes, `viewChanged` deciding per sink.
   */
  viewEvents?: (listener: (kinds: ReadonlySet<EntryKind>) => void) => () => void;
}

export class ListChangedFanout {
  private readonly sinks = new Set<ChangeSink>();
  private readonly unsubscribe: () => void;
  private readonly viewChanged: FanoutOptions['viewChanged'];
  private readonly intervalMs: number;
  /** Kinds changed since the last delivery, waiting for the end of the interval. */
  private pending = new Set<EntryKind>();
  /** Runs while an interval is open (a delivery was made less than `intervalMs` ago). */
  private timer: NodeJS.Timeout | undefined;
  private readonly tick = (): void => {
    this.timer = undefined;
    this.flush();
  };

  constructor(
    registry: Registry,
    opts: FanoutOptions = {},
    /** The shortest time between two deliveries (`limits.notices.list_changed_interval_ms`). */
    intervalMs = DEFAULT_LIST_CHANGED_INTERVAL_MS,
  ) {
    this.viewChanged = opts.viewChanged;
    this.intervalMs = intervalMs;
    const offRegistry = registry.onChange((kinds) => this.publish(kinds));
    const offViews = opts.viewEvents?.((kinds) => this.publish(kinds));
    this.unsubscribe = () => {
      offRegistry();
      offViews?.();
    };
  }

  get size(): number {
    return this.sinks.size;
  }

  add(sink: ChangeSink): () => void {
    this.sinks.add(sink);
    return () => {
      this.sinks.delete(sink);
    };
  }

  /**
   * Kinds changed: delivered now when no interval is open, else at its end with whatever else
   * changed meanwhile.
   */
  publish(kinds: ReadonlySet<EntryKind>): void {
    for (const kind of kinds) this.pending.add(kind);
    if (this.timer === undefined) this.flush();
  }

  /** Delivers what is pending and opens the next interval (none when nothing was pending). */
  private flush(): void {
    if (this.pending.size === 0) return;
    const kinds = this.pending;
    this.pending = new Set();
    this.timer = setTimeout(this.tick, this.intervalMs);
    this.timer.unref();
    this.deliver(kinds);
  }

  private deliver(kinds: ReadonlySet<EntryKind>): void {
    for (const sink of this.sinks) {
      for (const kind of kinds) {
        if (!sink.kinds.has(kind)) continue;
        if (this.viewChanged && !this.viewChanged(sink, kind)) continue;
        try {
          sink.deliver(kind);
        } catch {
          // A broken channel must not keep the others from hearing about the change.
        }
      }
    }
  }

  close(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.pending.clear();
    this.unsubscribe();
    this.sinks.clear();
  }
}

export const ALL_KINDS: ReadonlySet<EntryKind> = new Set<EntryKind>([
  'tools',
  'prompts',
  'resources',
]);
