/**
 * The calls a Lua state has started with `mcp.call` (and tasks with `task.spawn`): their ids,
 * results, and the per-state limits on how many may be started and how many may run at once.
 * `mcp.poll` reads it, `task.await` waits on it.
 */
import type { ToolResult } from '../registry/types.js';
import type { ToolCaller } from './tool-caller.js';

/** What `mcp.poll` and `task.await` hand back for a finished call. */
export interface PollResult {
  id: string;
  is_error: boolean;
  content: string;
  /** A spawned task's first return value. */
  value?: unknown;
}

export interface CallTrackerLimits {
  /** Calls (and spawned tasks) one state may start in all; unlimited when absent. */
  maxCalls?: number;
  /** Calls that may run at once; unlimited when absent. */
  maxConcurrent?: number;
  /**
   * Tool calls (`mcp.call`, `tools.use`; spawned tasks not counted) that may run at once, and
   * the config key that sets it (a plugin's `plugin_limits.calls_in_flight`); unlimited when absent.
   */
  callsInFlight?: { max: number; key: string };
}

/** How a call or task ended. */
interface Outcome {
  result?: ToolResult;
  error?: string;
  value?: unknown;
}

interface Entry {
  done: PollResult | undefined;
  result: ToolResult | undefined;
  promise: Promise<PollResult>;
}

/** Finished results kept for a state without a call limit (a plugin): the newest ones. */
const KEEP_FINISHED = 1024;

/** The text of a result: its text items joined, or the JSON of structuredContent. */
export function resultText(result: ToolResult): string {
  const texts = result.content
    .filter((c) => c.type === 'text' && typeof c.text === 'string')
    .map((c) => c.text as string);
  if (texts.length > 0) return texts.join('\n');
  if (result.structuredContent !== undefined) return JSON.stringify(result.structuredContent);
  return '';
}

export class CallTracker {
  private readonly entries = new Map<string, Entry>();
  /** Ids of finished entries, oldest first, from `head` on: forgetting one is O(1). */
  private readonly finished: string[] = [];
  private head = 0;
  private started = 0;
  private running = 0;
  /** Tool calls running (`running` less the tasks). */
  private calls = 0;
  private nextId = 1;

  constructor(
    private readonly caller: () => ToolCaller,
    private readonly limits: CallTrackerLimits = {},
  ) {}

  /** Why a new call (or task) may not start now, or undefined. */
  private refusal(kind: 'call' | 'task'): string | undefined {
    const { maxCalls, maxConcurrent, callsInFlight } = this.limits;
    if (maxCalls !== undefined && this.started >= maxCalls) {
      return `call limit exceeded: a script may start at most ${maxCalls} calls`;
    }
    if (maxConcurrent !== undefined && this.running >= maxConcurrent) {
      return `concurrency limit exceeded: at most ${maxConcurrent} calls may run at once (wait for some with task.await before starting more)`;
    }
    if (kind === 'call' && callsInFlight !== undefined && this.calls >= callsInFlight.max) {
      return `calls in flight limit exceeded: at most ${callsInFlight.max} tool calls (mcp.call, tools.use) of this plugin may run at once (${callsInFlight.key}); wait for some with task.await before starting more`;
    }
    return undefined;
  }

  /** Starts a tool call, or records a refusal; returns the request id either way. */
  start(name: string, args: Record<string, unknown> | undefined, refused?: string): string {
    const reason = refused ?? this.refusal('call');
    // A refused call never runs: mcp.poll answers it at once, not after a turn (LUA_API §3.1).
    if (reason !== undefined) return this.track('call', { error: reason });
    this.started++;
    return this.track('call', async () => {
      this.running++;
      this.calls++;
      try {
        return { result: await this.caller().call(name, args ?? {}) };
      } catch (err) {
        return { error: err instanceof Error ? err.message : String(err) };
      } finally {
        this.running--;
        this.calls--;
      }
    });
  }

  /** Tracks a spawned task (its promise yields the function's first value or throws). */
  spawn(run: () => Promise<unknown>): string | { refused: string } {
    const reason = this.refusal('task');
    if (reason !== undefined) return { refused: reason };
    this.started++;
    return this.track('task', async () => {
      this.running++;
      try {
        return { value: await run() };
      } catch (err) {
        return { error: err instanceof Error ? err.message : String(err) };
      } finally {
        this.running--;
      }
    });
  }

  /** Tracks work under a new id; an outcome known already (a refusal) is finished at once. */
  private track(kind: string, work: (() => Promise<Outcome>) | Outcome): string {
    const id = `${kind}-${this.nextId++}`;
    const entry: Entry = { done: undefined, result: undefined, promise: undefined as never };
    this.entries.set(id, entry);
    entry.promise =
      typeof work === 'function'
        ? work().then((out) => this.finish(id, entry, out))
        : Promise.resolve(this.finish(id, entry, work));
    return id;
  }

  private finish(id: string, entry: Entry, out: Outcome): PollResult {
    let done: PollResult;
    if (out.error !== undefined) {
      done = { id, is_error: true, content: out.error };
    } else if (out.result !== undefined) {
      entry.result = out.result;
      done = { id, is_error: out.result.isError === true, content: resultText(out.result) };
    } else {
      done = { id, is_error: false, content: '', value: out.value };
    }
    entry.done = done;
    this.finished.push(id);
    this.forgetOld();
    return done;
  }

  /**
   * Drops the oldest finished entries past KEEP_FINISHED. Walking the Map from its start each
   * time was quadratic (running entries and deleted slots were walked over again and again).
   */
  private forgetOld(): void {
    if (this.limits.maxCalls !== undefined) return;
    while (this.finished.length - this.head > KEEP_FINISHED) {
      this.entries.delete(this.finished[this.head++] as string);
    }
    if (this.head > 4096 && this.head * 2 > this.finished.length) {
      this.finished.splice(0, this.head);
      this.head = 0;
    }
  }

  private unknown(id: string): PollResult {
    return { id, is_error: true, content: `unknown request id: ${id}` };
  }

  /** The finished result, undefined while running; an unknown id is an error result. */
  poll(id: string): PollResult | undefined {
    const e = this.entries.get(id);
    if (!e) return this.unknown(id);
    return e.done;
  }

  wait(id: string): Promise<PollResult> {
    const e = this.entries.get(id);
    return e ? e.promise : Promise.resolve(this.unknown(id));
  }

  /** The full tool result of a finished call (tools.use decodes it). */
  result(id: string): ToolResult | undefined {
    return this.entries.get(id)?.result;
  }

  /** Calls not yet finished. */
  get inFlight(): number {
    return this.running;
  }
}
