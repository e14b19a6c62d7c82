/**
 * The tasks (`task.spawn`) running in a plugin's worker, each with a hard deadline like a call's,
 * and what an overrun calls for. A task outlives the call (or the load) that spawned it, so no
 * call's deadline covered it: one stuck in a long library call kept the worker's thread busy for
 * good (and at load held the hub's start for the load's own 20 s stop).
 */

/** A task running in a plugin's worker, as the worker reported it. */
export interface RunningTask {
  /** performance.now() ms past which the worker is stopped hard. */
  deadline: number;
  limitMs: number;
  /** Spawned outside any handler call: the top level, its tasks, a callback. */
  background: boolean;
}

/**
 * A background task that overruns again this soon after the restart its overrun caused stops
 * the plugin: its top level spawns it again at each load, so restarting would loop for good.
 * The default of `plugin_limits.task_restart_quiet_ms`.
 */
export const TASK_RESTART_QUIET_MS = 60_000;
const QUIET_KEY = 'plugin_limits.task_restart_quiet_ms';

/** What a task's overrun calls for, with the words for the log and the failed load. */
export interface TaskOverrun {
  /** Restart the plugin; false: stop it for good (until its file changes). */
  restart: boolean;
  reason: string;
  /** The error of a load the task was stuck in. */
  loadError: string;
  /** The log line when the plugin is stopped. */
  stopped: string;
}

export class PluginTasks {
  private readonly tasks = new Map<number, RunningTask>();
  /** When a background task's overrun last restarted the plugin (performance.now() ms). */
  private restartedAt = -Infinity;

  constructor(
    private readonly graceMs: number,
    private readonly quietMs = TASK_RESTART_QUIET_MS,
  ) {}

  /** Records a task that started; returns its deadline (arm the hard stop for it). */
  started(id: number, limitMs: number, background: boolean): number {
    const deadline = performance.now() + limitMs + this.graceMs;
    this.tasks.set(id, { deadline, limitMs, background });
    return deadline;
  }

  ended(id: number): void {
    this.tasks.delete(id);
  }

  /** The worker is gone: its tasks with it. */
  clear(): void {
    this.tasks.clear();
  }

  /** A task past its deadline at `now`, or the earliest deadline to come (Infinity: none). */
  check(now: number): RunningTask | number {
    let next = Infinity;
    for (const t of this.tasks.values()) {
      if (t.deadline <= now) return t;
      if (t.deadline < next) next = t.deadline;
    }
    return next;
  }

  /**
   * What `t`'s overrun calls for. A task spawned in a handler call restarts the plugin, as a
   * call does (its clients drive it); a background one restarts it unless the last restart was
   * for such an overrun less than `quietMs` ago.
   */
  overrun(t: RunningTask, now: number): TaskOverrun {
    const what = t.background ? 'a task spawned outside any handler call' : 'a task';
    const reason = `${what} (task.spawn) overran its ${t.limitMs} ms limit by ${this.graceMs} ms`;
    let restart = true;
    if (t.background) {
      restart = now - this.restartedAt >= this.quietMs;
      if (restart) this.restartedAt = now;
    }
    return {
      restart,
      reason,
      loadError: `timeout: ${what} ran longer than its ${t.limitMs} ms limit while the plugin loaded and was stopped hard (it was stuck in one long library call)`,
      stopped: `plugin stopped: ${reason} again within ${this.quietMs / 1000} s of the restart it caused (${QUIET_KEY}); it is not restarted (its top level would spawn it again): fix the plugin and save it to load it again`,
    };
  }
}
