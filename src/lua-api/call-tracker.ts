/**
 * The calls a Lua state has started with `mcp.call` (and tasks with `task.spawn`): their ids,
 * results, and the per-state limits on how many may be started and how many may run at once.
 * `mcp.poll` reads it, `task.await` waits on it.
 */
import type { ToolResult } from '../registry/types.js';
import type { ToolCaller } from './tool-caller.js';
import { innerNameRefusal } from './inner-refusals.js';
import { CallsInFlight, type FlightLimits } from './calls-in-flight.js';

/** What `mcp.poll` and `task.await` hand back for a finished call. */
export interface PollResult {
  id: string;
  is_error: boolean;
  content: string;
  /** A spawned task's first return value. */
  value?: unknown;
}

export interface CallTrackerLimits extends FlightLimits {
  /** Calls (and spawned tasks) one state may start in all; unlimited when absent. */
  maxCalls?: number;
  /** Calls that may run at once; unlimited when absent. */
  maxConcurrent?: number;
  /**
   * The state's tool calls in flight, when `mcp.call_tool` shares them (a plugin); else made
   * from FlightLimits' bounds (`calls_in_flight` and its per-principal share).
   */
  flight?: CallsInFlight;
  /** Characters of a tool name a call may name (the front door's `limits.name_length`). */
  nameLength?: number;
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
  private nextId = 1;
  /** The tool calls in flight of the state (shared with `mcp.call_tool` when given). */
  private readonly flight: CallsInFlight;

  constructor(
    private readonly caller: () => ToolCaller,
    private readonly limits: CallTrackerLimits = {},
  ) {
    this.flight = limits.flight ?? new CallsInFlight(limits);
  }

  /** Why a new call (or task) may not start now, or undefined. */
  private refusal(): string | undefined {
    const { maxCalls, maxConcurrent } = this.limits;
    if (maxCalls !== undefined && this.started >= maxCalls) {
      return `call limit exceeded: a script may start at most ${maxCalls} calls`;
    }
    if (maxConcurrent !== undefined && this.running >= maxConcurrent) {
      return `concurrency limit exceeded: at most ${maxConcurrent} calls may run at once (wait for some with task.await before starting more)`;
    }
    return undefined;
  }

  /** Why a call naming `name` may not start: the front door's name bound, or undefined. */
  private nameRefusal(name: string): string | undefined {
    const max = this.limits.nameLength;
    const refusal = max === undefined ? undefined : innerNameRefusal(name, max);
    if (refusal === undefined) return undefined;
    this.limits.refused?.('name_length');
    return refusal.message;
  }

  /** Starts a tool call, or records a refusal; returns the request id either way. */
  start(name: string, args: Record<string, unknown> | undefined, refused?: string): string {
    // Who starts it, read now: the handler whose code runs at this moment.
    const flight = this.flight;
    const who = flight.who();
    const reason = this.nameRefusal(name) ?? refused ?? this.refusal() ?? flight.refusal(who);
    // A refused call never runs: mcp.poll answers it at once, not after a turn (LUA_API §3.1).
    if (reason !== undefined) return this.track('call', { error: reason });
    this.started++;
    return this.track('call', async () => {
      this.running++;
      flight.enter(who);
      try {
        return { result: await this.caller().call(name, args ?? {}) };
      } catch (err) {
        return { error: err instanceof Error ? err.message : String(err) };
      } finally {
        this.running--;
        flight.leave(who);
      }
    });
  }

  /** Tracks a spawned task (its promise yields the function's first value or throws). */
  spawn(run: () => Promise<unknown>): string | { refused: string } {
    const reason = this.refusal();
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
