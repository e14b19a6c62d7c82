/**
 * The registry's listeners and batching: change events (one per batch, naming every kind that
 * changed), resource-updated notices, and handler failures. Kept apart from the entry maps so
 * registry.ts holds only what is registered.
 */
import { HandlerError, RegistryError, type HandlerKind } from './errors.js';
import { OwnerChanges } from './owner-changes.js';
import type { CallContext, EntryKind, OwnerFilter } from './types.js';

export type ChangeListener = (kinds: ReadonlySet<EntryKind>) => void;
/** Told when a resource's content changed (`mcp.resource_updated`), for its subscribers. */
export type ResourceUpdateListener = (uri: string) => void;
/** Told when a prompt, resource or completion handler failed (the plugin's error, for the log). */
export type HandlerErrorListener = (err: HandlerError) => void;
/** Told when a definition was registered with a part the hub does not enforce (for the log). */
export type DefinitionWarningListener = (owner: string, message: string) => void;

export class RegistryEvents {
  private readonly listeners = new Set<ChangeListener>();
  private readonly updateListeners = new Set<ResourceUpdateListener>();
  private readonly failureListeners = new Set<HandlerErrorListener>();
  private readonly warningListeners = new Set<DefinitionWarningListener>();
  private batchDepth = 0;
  private pending = new Set<EntryKind>();
  /** Bumped on every change of a kind; views cache against it. */
  readonly versions: Record<EntryKind, number> = { tools: 0, prompts: 0, resources: 0 };
  private readonly owners = new OwnerChanges();

  onChange(listener: ChangeListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  onHandlerError(listener: HandlerErrorListener): () => void {
    this.failureListeners.add(listener);
    return () => this.failureListeners.delete(listener);
  }

  onDefinitionWarning(listener: DefinitionWarningListener): () => void {
    this.warningListeners.add(listener);
    return () => this.warningListeners.delete(listener);
  }

  definitionWarning(owner: string, message: string): void {
    for (const listener of this.warningListeners) {
      try {
        listener(owner, message);
      } catch {
        // A broken log listener must not refuse the registration.
      }
    }
  }

  /**
   * Runs a prompt, resource or completion handler; what it throws becomes a HandlerError that
   * names its owner, told to the listeners. A call stopped because its caller went away (or its
   * 2026 input round ended) is not the plugin's failure and passes through unchanged.
   */
  async guarded<T>(
    owner: string,
    kind: HandlerKind,
    subject: string,
    ctx: CallContext,
    run: () => Promise<T>,
  ): Promise<T> {
    try {
      return await run();
    } catch (err) {
      if (ctx.signal?.aborted === true) throw err;
      const failure = new HandlerError(owner, kind, subject, err);
      for (const listener of this.failureListeners) {
        try {
          listener(failure);
        } catch {
          // A broken log listener must not change what the client is told.
        }
      }
      throw failure;
    }
  }

  onResourceUpdated(listener: ResourceUpdateListener): () => void {
    this.updateListeners.add(listener);
    return () => this.updateListeners.delete(listener);
  }

  /** Tells subscribers that the content behind `uri` changed. */
  resourceUpdated(uri: string): void {
    for (const listener of this.updateListeners) {
      try {
        listener(uri);
      } catch {
        // One broken subscriber must not keep the others from hearing about it.
      }
    }
  }

  beginBatch(): void {
    this.batchDepth++;
  }

  endBatch(): void {
    if (this.batchDepth === 0) {
      throw new RegistryError('batch_mismatch', 'end_batch called without a matching begin_batch');
    }
    this.batchDepth--;
    if (this.batchDepth === 0) this.flush();
  }

  /**
   * Records a change of `kind` by `owner` (`previous`: the owner it took an entry from): told to
   * the listeners now, or when the open batch ends.
   */
  changed(kind: EntryKind, owner?: string, previous?: string): void {
    this.owners.record(kind, ++this.versions[kind], owner, previous);
    this.pending.add(kind);
    if (this.batchDepth === 0) this.flush();
  }

  /** Whether an entry of `kind` that `filter` shows changed after `version` (see OwnerChanges). */
  changedSince(kind: EntryKind, version: number, filter: OwnerFilter): boolean {
    return this.owners.since(kind, version, filter);
  }

  private flush(): void {
    if (this.pending.size === 0) return;
    const kinds = this.pending;
    this.pending = new Set();
    for (const listener of this.listeners) {
      try {
        listener(kinds);
      } catch {
        // A broken listener must not stop the others or the registration that triggered it.
      }
    }
  }
}
