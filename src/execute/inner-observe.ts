/**
 * An `execute` run's inner tool calls, shown to the hub's observers (metrics, audit log,
 * dashboard) one by one, like the client's own requests: an operator sees which tools a script
 * called, for whom, with what outcome. Calls through the hub's thread are observed as they run;
 * direct calls (direct-calls.ts) never touch this thread, so the script's worker keeps a record
 * of each and the hub replays them when the run ends, after its answer went out.
 */
import type { ToolCaller } from '../lua-api/tool-caller.js';
import type { CallContext, ToolResult } from '../registry/types.js';

export type InnerOutcome = 'ok' | 'tool_error' | 'error';

/** An inner call as it starts. */
export interface InnerCallStart {
  name: string;
  /** The call's arguments; only when the sink asked for them (`wantsArguments`). */
  args: Record<string, unknown> | undefined;
  principal: string | undefined;
  sessionId: string | undefined;
  /** Date.now() at the start. */
  startedAt: number;
  path: 'direct' | 'hub';
}

export interface InnerCallEnd {
  outcome: InnerOutcome;
  errorMessage?: string;
  durationMs: number;
}

/** Where inner calls are announced; the returned function (if any) hears the call's end. */
export interface InnerCallSink {
  start(call: InnerCallStart): ((end: InnerCallEnd) => void) | undefined;
  /** The audit log wants the arguments (for their size and hash): direct calls send them back. */
  wantsArguments: boolean;
}

/**
 * One direct call as the script's worker saw it: name, Date.now() at its start, ms it took,
 * outcome, error text (cut), and the arguments when asked for.
 */
export type DirectCallRecord = [
  string,
  number,
  number,
  InnerOutcome,
  string | undefined,
  Record<string, unknown> | undefined,
];

/** The longest error text a record carries (the observers cut to 300 anyway). */
export const ERROR_TEXT_MAX = 300;

/** The outcome of a settled call, and the error text an `isError` result starts with. */
export function outcomeOfResult(result: ToolResult): [InnerOutcome, string | undefined] {
  if (result.isError !== true) return ['ok', undefined];
  const first = result.content?.[0];
  const text = first?.type === 'text' && typeof first.text === 'string' ? first.text : undefined;
  return ['tool_error', text?.slice(0, ERROR_TEXT_MAX)];
}

function who(ctx: CallContext): Pick<InnerCallStart, 'principal' | 'sessionId'> {
  return { principal: ctx.principal, sessionId: ctx.session_uuid };
}

/** `call`, with each call a script makes through the hub's thread observed. */
export function observeHubCalls(
  call: ToolCaller['call'],
  sink: InnerCallSink,
  ctx: CallContext,
): ToolCaller['call'] {
  const id = who(ctx);
  return (name, args) => {
    const t0 = performance.now();
    const end = sink.start({
      name,
      args: sink.wantsArguments ? args : undefined,
      ...id,
      startedAt: Date.now(),
      path: 'hub',
    });
    const pending = call(name, args);
    if (end === undefined) return pending;
    return pending.then(
      (result) => {
        const [outcome, errorMessage] = outcomeOfResult(result);
        end({ outcome, errorMessage, durationMs: performance.now() - t0 });
        return result;
      },
      (err: unknown) => {
        const text = err instanceof Error ? err.message : String(err);
        end({
          outcome: 'error',
          errorMessage: text.slice(0, ERROR_TEXT_MAX),
          durationMs: performance.now() - t0,
        });
        throw err;
      },
    );
  };
}

/** Announces the direct calls a run reported, each as started and ended. */
export function replayDirectCalls(
  sink: InnerCallSink,
  ctx: CallContext,
  records: readonly DirectCallRecord[],
): void {
  const id = who(ctx);
  for (const [name, startedAt, durationMs, outcome, errorMessage, args] of records) {
    const end = sink.start({ name, args, ...id, startedAt, path: 'direct' });
    end?.({ outcome, errorMessage, durationMs });
  }
}
