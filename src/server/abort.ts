/**
 * A call's abort source. An AbortController fits; transports pass lazy ones so a request whose
 * handler never looks at its signal never pays for making one.
 */
import type { AbortWatch, AbortWatcher } from '../registry/types.js';

export interface Abortable {
  readonly signal: AbortSignal;
  abort(reason?: unknown): void;
}

/**
 * An Abortable whose AbortController is made on first use of `signal`. A hot path that only needs
 * to hear the abort (a proxied call) `watch`es instead: no AbortController, no EventTarget, and
 * the transport's own hook (`armed`: a response's 'close' listener) is attached once either way.
 */
export class LazyAbort implements Abortable, AbortWatch {
  private ctl: AbortController | undefined;
  private isArmed = false;
  private done = false;
  private why: unknown;
  /** Usually one watcher (the call's upstream request); a Set only for more. */
  private watchers: AbortWatcher | Set<AbortWatcher> | undefined;

  get signal(): AbortSignal {
    return this.controller().signal;
  }

  get aborted(): boolean {
    return this.done;
  }

  get reason(): unknown {
    return this.why;
  }

  abort(reason?: unknown): void {
    if (this.done) return;
    this.done = true;
    this.why = reason;
    this.ctl?.abort(reason);
    const w = this.watchers;
    this.watchers = undefined;
    if (w === undefined) return;
    if (w instanceof Set) for (const one of w) one.handleAbort(reason);
    else w.handleAbort(reason);
  }

  /** Calls `w.handleAbort` once the call is aborted; false (and no call) when it already is. */
  watch(w: AbortWatcher): boolean {
    if (!this.done) this.arm();
    // The transport's hook may have found the caller gone already.
    if (this.done) return false;
    const have = this.watchers;
    if (have === undefined) this.watchers = w;
    else if (have instanceof Set) have.add(w);
    else this.watchers = new Set([have, w]);
    return true;
  }

  unwatch(w: AbortWatcher): void {
    const have = this.watchers;
    if (have === w) this.watchers = undefined;
    else if (have instanceof Set) have.delete(w);
  }

  private controller(): AbortController {
    if (this.ctl === undefined) {
      const ctl = new AbortController();
      this.ctl = ctl;
      if (this.done) ctl.abort(this.why);
      else this.arm();
    }
    return this.ctl;
  }

  private arm(): void {
    if (this.isArmed) return;
    this.isArmed = true;
    this.armed();
  }

  /** Called once, when someone first listens: transports start watching their connection here. */
  protected armed(): void {}
}
