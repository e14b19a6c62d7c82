/**
 * What interrupts a call while it waits on a host promise: its deadline and its abort signal.
 */
import { LuaError, LuaLimitError, limitMessage } from './errors.js';

/**
 * Rejects when the call runs out of time or is cancelled while it waits. Built at the first
 * wait only: most calls never wait, and a timer per call would sit on the tools/call path.
 */
export class CallGuard {
  private interrupted: Promise<never> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private onAbort: (() => void) | undefined;

  private signal: AbortSignal | undefined;

  /**
   * `limits.signal` is read at the first wait, not here: the Lua bindings pass a getter whose
   * first read makes the transport build an AbortController (LazySignalLimits).
   */
  constructor(
    private readonly deadline: number,
    private readonly timeoutMs: number,
    private readonly limits: { readonly signal?: AbortSignal },
  ) {}

  /** A promise that rejects on timeout or abort (the same one for every wait of the call). */
  wait(): Promise<never> {
    this.interrupted ??= new Promise<never>((_, reject) => {
      this.timer = setTimeout(
        () => reject(new LuaLimitError('timeout', limitMessage('timeout', this.timeoutMs))),
        Math.max(0, this.deadline - performance.now()),
      );
      const signal = (this.signal = this.limits.signal);
      if (signal) {
        this.onAbort = () => reject(new LuaError('the call was cancelled'));
        if (signal.aborted) this.onAbort();
        else signal.addEventListener('abort', this.onAbort, { once: true });
      }
    });
    this.interrupted.catch(() => undefined);
    return this.interrupted;
  }

  /** Clears the timer and the abort listener once the call has ended. */
  dispose(): void {
    if (this.timer) clearTimeout(this.timer);
    if (this.onAbort) this.signal?.removeEventListener('abort', this.onAbort);
  }
}
