/**
 * One hard-stop timer for all of an isolated plugin's calls in flight, armed for the earliest
 * deadline (a timer per call cost a setTimeout + clearTimeout each). What to do when it fires
 * (stop the call past its deadline, re-arm for the next) is the plugin's.
 */
export class HardStop {
  private timer: NodeJS.Timeout | undefined;
  /** When the timer fires (performance.now() ms). */
  private armedFor = Infinity;

  constructor(private readonly fired: () => void) {}

  /** Arms the timer for `deadline` unless it already fires by then. */
  arm(deadline: number): void {
    if (deadline >= this.armedFor) return;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.armedFor = deadline;
    this.timer = setTimeout(
      () => {
        this.timer = undefined;
        this.armedFor = Infinity;
        this.fired();
      },
      Math.max(0, deadline - performance.now()),
    );
    // Calls in flight do not keep the process alive by themselves (nor did their timers matter
    // there: the worker and the clients' sockets do).
    this.timer.unref();
  }

  /** Disarms the timer; the next `arm` arms it afresh. */
  clear(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    this.armedFor = Infinity;
  }
}
