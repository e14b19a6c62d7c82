/**
 * A call's abort source. An AbortController fits; transports pass lazy ones so a request whose
 * handler never looks at its signal never pays for making one.
 */
export interface Abortable {
  readonly signal: AbortSignal;
  abort(reason?: unknown): void;
}

/** An Abortable whose AbortController is made on first use; `created` lets transports hook it. */
export class LazyAbort implements Abortable {
  private ctl: AbortController | undefined;

  get signal(): AbortSignal {
    return this.controller().signal;
  }

  abort(reason?: unknown): void {
    this.controller().abort(reason);
  }

  private controller(): AbortController {
    if (this.ctl === undefined) {
      this.ctl = new AbortController();
      this.created(this.ctl);
    }
    return this.ctl;
  }

  protected created(_ctl: AbortController): void {}
}
