/**
 * list_changed fan-out: one registry listener that tells every open notification channel (2025
 * session GET streams, 2026 `subscriptions/listen` streams, the stdio peer) which lists changed.
 */
import type { Registry } from '../registry/registry.js';
import type { EntryKind } from '../registry/types.js';

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

  constructor(registry: Registry, opts: FanoutOptions = {}) {
    this.viewChanged = opts.viewChanged;
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

  publish(kinds: ReadonlySet<EntryKind>): void {
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
    this.unsubscribe();
    this.sinks.clear();
  }
}

export const ALL_KINDS: ReadonlySet<EntryKind> = new Set<EntryKind>([
  'tools',
  'prompts',
  'resources',
]);
