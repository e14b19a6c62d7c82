/**
 * The observer seam: every inbound call, dispatched or refused, as one record at its start and
 * its end, for metrics, the audit log, tracing and a per-call log line. With no observer the
 * dispatcher makes no record and reads no clock, so an unobserved hub pays one `undefined` check
 * per call.
 */
import type { JsonRpcId } from './jsonrpc.js';
import type { RequestScope, TransportName } from './session.js';

/** How a call ended. */
export type CallOutcome =
  /** A result (for tools/call: not `isError`). */
  | 'ok'
  /** tools/call answered with an `isError` result (the tool failed, or its arguments did). */
  | 'tool_error'
  /** A JSON-RPC error answer (`errorCode` says which). */
  | 'error'
  /** 2026-07-28: the call asked the client for input (`input_required`). */
  | 'input_required'
  /** Refused before dispatch by the inbound layer (batch, era, session or envelope rules). */
  | 'rejected';

/** One inbound call as observers see it. Fields after `method` fill in as the call resolves. */
export interface ObservedCall {
  readonly era: 'legacy' | 'modern' | undefined;
  readonly transport: TransportName;
  readonly principal: string | undefined;
  /** The JSON-RPC id; null for a refused message without a usable id. */
  readonly id: JsonRpcId | null;
  readonly method: string;
  /** The tool or prompt name, or the resource URI, the call names. */
  name: string | undefined;
  /** The owner (plugin, `builtin:*`, upstream's plugin) of the resolved tool, prompt or resource. */
  owner: string | undefined;
  /** `agent_name` and `target` of the caller, once its context was made. */
  agent: string | undefined;
  target: string | undefined;
  /** Bytes of the call's `arguments` as JSON (computed only for observed calls). */
  argumentBytes: number;
  /** `performance.now()` at the start. */
  readonly startedAt: number;
  outcome: CallOutcome | undefined;
  errorCode: number | undefined;
  /** Milliseconds from start to end. */
  durationMs: number;
}

export interface CallObserver {
  /** A call starts (after the inbound layer accepted it, before its handler runs). */
  started?(call: ObservedCall): void;
  /** A call ended or was refused; `call.outcome`, `errorCode` and `durationMs` are set. */
  ended?(call: ObservedCall): void;
}

/** Several observers behind one (undefined when there are none, which keeps calls unobserved). */
export function combineObservers(list: readonly CallObserver[]): CallObserver | undefined {
  if (list.length === 0) return undefined;
  if (list.length === 1) return list[0];
  return {
    started: (c) => {
      for (const o of list) safely(() => o.started?.(c));
    },
    ended: (c) => {
      for (const o of list) safely(() => o.ended?.(c));
    },
  };
}

function safely(fn: () => void): void {
  try {
    fn();
  } catch {
    // An observer's failure must not change the call it watches.
  }
}

/** Starts the record of one call (only called when an observer listens). */
export function observeStart(
  observer: CallObserver,
  scope: RequestScope | undefined,
  transport: TransportName,
  principal: string | undefined,
  id: JsonRpcId | null,
  method: string,
  params: Record<string, unknown> | undefined,
): ObservedCall {
  const call: ObservedCall = {
    era: scope?.era,
    transport: scope?.transport ?? transport,
    principal: scope?.principal ?? scope?.session?.principal ?? principal,
    id,
    method,
    name: nameOf(method, params),
    owner: undefined,
    agent: undefined,
    target: undefined,
    argumentBytes: argumentBytes(params),
    startedAt: performance.now(),
    outcome: undefined,
    errorCode: undefined,
    durationMs: 0,
  };
  safely(() => observer.started?.(call));
  return call;
}

/** Ends the record: outcome, error code, duration; tells the observer. */
export function observeEnd(
  observer: CallObserver,
  call: ObservedCall,
  outcome: CallOutcome,
  errorCode?: number,
): void {
  call.outcome = outcome;
  call.errorCode = errorCode;
  call.durationMs = performance.now() - call.startedAt;
  safely(() => observer.ended?.(call));
}

function nameOf(method: string, params: Record<string, unknown> | undefined): string | undefined {
  const v = method === 'resources/read' ? params?.uri : params?.name;
  return typeof v === 'string' ? v : undefined;
}

function argumentBytes(params: Record<string, unknown> | undefined): number {
  const args = params?.arguments;
  if (args === undefined || args === null) return 0;
  try {
    return Buffer.byteLength(JSON.stringify(args));
  } catch {
    return 0;
  }
}
