/**
 * A proxy's Lua callbacks (transform_arguments, on_auth_error) run in an isolated plugin's
 * worker: the hub asks by message and waits, within the default handler limit plus the grace.
 */
import type { FromWorker, ToWorker } from './worker-protocol.js';

interface Waiting {
  resolve: (v: unknown) => void;
  reject: (e: Error) => void;
  timer: NodeJS.Timeout;
}

export class ProxyCallbacks {
  /** Callbacks sent to the worker, by id. */
  private readonly waiting = new Map<number, Waiting>();

  constructor(
    private readonly post: (msg: ToWorker) => void,
    private readonly limitMs: () => number,
  ) {}

  /** Runs the callback in the worker; `id` is unique among the plugin's messages. */
  call(id: number, url: string, which: 'transform' | 'auth', args: unknown[]): Promise<unknown> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiting.delete(id);
        reject(
          new Error(
            `timeout: the plugin's ${which === 'auth' ? 'on_auth_error' : 'transform_arguments'} did not answer`,
          ),
        );
      }, this.limitMs());
      this.waiting.set(id, { resolve, reject, timer });
      this.post({ type: 'callback', id, url, which, args });
    });
  }

  /** The worker's answer. */
  done(msg: Extract<FromWorker, { type: 'callback-done' }>): void {
    const c = this.waiting.get(msg.id);
    if (!c) return;
    this.waiting.delete(msg.id);
    clearTimeout(c.timer);
    if (msg.ok) c.resolve(msg.value);
    else c.reject(new Error(msg.error));
  }

  /** The callback's message could not be copied to the worker: it fails, not the plugin. */
  uncloneable(id: number, err: Error): void {
    const c = this.waiting.get(id);
    if (c === undefined) return;
    clearTimeout(c.timer);
    this.waiting.delete(id);
    c.reject(new Error(`the callback's arguments cannot be passed to the plugin: ${err.message}`));
  }
}
