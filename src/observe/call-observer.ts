/**
 * The observer seam: every MCP request a transport hands its dispatcher is announced to the
 * observers (metrics, audit, live calls) when it starts and when it ends, and runs inside the
 * request's trace span when tracing is on. It wraps an McpDispatcher, so a transport only has to
 * be given the wrapped one (`dispatcher` option of startHttpServer / serveStdio).
 */
import type { McpDispatcher, RequestScope } from '../server/index.js';
import type { JsonRpcRequest } from '../server/jsonrpc.js';
import type { IncomingMessage } from 'node:http';
import type { Registry } from '../registry/registry.js';
import type { UpstreamCallHook } from '../upstream/call-hook.js';

/** `execute`: an inner tool call of an `execute` script, made for the script's caller. */
export type Transport = 'http' | 'stdio' | 'execute';
export type Outcome = 'ok' | 'tool_error' | 'error';

/** A request as it starts. `params` is the client's; observers must not keep or change it. */
export interface CallStart {
  transport: Transport;
  /** The client's protocol era; undefined for an `execute` script's inner calls. */
  era: RequestScope['era'] | undefined;
  method: string;
  /** The tool or prompt name, or the resource URI; undefined for other methods. */
  name: string | undefined;
  principal: string | undefined;
  /** The 2025 session id (HTTP), if any. */
  sessionId: string | undefined;
  params: Record<string, unknown>;
  /** Date.now() at the start. */
  startedAt: number;
}

export interface CallEnd {
  outcome: Outcome;
  /** The JSON-RPC error code of an `error` outcome. */
  errorCode?: number;
  /** The error message (JSON-RPC error or the tool's error text), shortened. */
  errorMessage?: string;
  durationMs: number;
}

export interface CallObserver {
  /** A request began; the returned function (if any) is called once when it ends. */
  start(call: CallStart): ((end: CallEnd) => void) | undefined;
}

/** What tracing.ts provides when the OTEL_* variables turn it on (loaded only then). */
export type OutcomeOf = (method: string, id: unknown, out: string) => Omit<CallEnd, 'durationMs'>;

export interface RequestTracer {
  /** Runs one request inside its SERVER span. */
  around(
    call: CallStart,
    msg: { id: unknown },
    run: () => Promise<string>,
    outcomeOf: OutcomeOf,
  ): Promise<string>;
  /** Puts the request's `traceparent` header (if any) around its body's processing. */
  bindHttp(req: IncomingMessage): void;
  /** Wraps the upstream call hook: a CLIENT span, and its context sent along. */
  upstreamHook(next: UpstreamCallHook | undefined): UpstreamCallHook;
  /** Spans for tool handlers: wraps the registry's callResolved. */
  instrument(registry: Registry): void;
  shutdown(): Promise<void>;
}

const EMPTY: Record<string, unknown> = {};

/**
 * An observer that throws must not fail the request it watches: thrown in the answer's
 * continuation, it rejected the answer, and nothing upstream caught that (the process died).
 */
function safely(end: (end: CallEnd) => void, arg: CallEnd): void {
  try {
    end(arg);
  } catch {
    // The observer's own loss (a metric, an audit line); the client's answer goes on.
  }
}

function startSafely(o: CallObserver, call: CallStart): ((end: CallEnd) => void) | undefined {
  try {
    return o.start(call);
  } catch {
    return undefined;
  }
}
const RESPONSE_HEAD = '{"jsonrpc":"2.0","id":'.length;
const ERROR_MESSAGE_MAX = 300;

function nameOf(method: string, params: Record<string, unknown>): string | undefined {
  const v = method === 'resources/read' ? params.uri : params.name;
  return typeof v === 'string' ? v : undefined;
}

/** Reads the outcome off the serialised response without parsing all of it. */
export function outcomeOf(method: string, id: unknown, out: string): Omit<CallEnd, 'durationMs'> {
  // A whole-number id (what clients send) is its own JSON; anything else is measured as JSON.
  const idLength =
    typeof id === 'number' && Number.isSafeInteger(id)
      ? String(id).length
      : (JSON.stringify(id ?? null)?.length ?? 4);
  const at = RESPONSE_HEAD + idLength + 1;
  if (out.startsWith('"error"', at)) {
    const head = out.slice(at, at + 2 * ERROR_MESSAGE_MAX);
    const code = /"code":(-?\d+)/.exec(head);
    const msg = /"message":"((?:[^"\\]|\\.)*)"/.exec(head);
    return {
      outcome: 'error',
      errorCode: code ? Number(code[1]) : undefined,
      errorMessage: msg ? unescape(msg[1]!) : undefined,
    };
  }
  if (method === 'tools/call' && out.includes('"isError":true')) {
    const text = /"text":"((?:[^"\\]|\\.)*)"/.exec(out.slice(at, at + 4 * ERROR_MESSAGE_MAX));
    return { outcome: 'tool_error', errorMessage: text ? unescape(text[1]!) : undefined };
  }
  return { outcome: 'ok' };
}

function unescape(s: string): string {
  let text: string;
  try {
    text = JSON.parse(`"${s}"`) as string;
  } catch {
    text = s;
  }
  return text.length > ERROR_MESSAGE_MAX ? text.slice(0, ERROR_MESSAGE_MAX) + '…' : text;
}

/** An `execute` script's inner call as it starts (the shape execute/inner-observe.ts sends). */
export interface InnerStart {
  name: string;
  args: Record<string, unknown> | undefined;
  principal: string | undefined;
  sessionId: string | undefined;
  startedAt: number;
}

/**
 * `execute`'s inner calls, shown to the same observers as the client's requests: each a
 * `tools/call` of transport `execute`, for the script's caller. `wantsArguments`: the audit log
 * hashes them (else direct calls do not send them back).
 */
export function observeInnerCalls(observers: readonly CallObserver[], wantsArguments: boolean) {
  return {
    wantsArguments,
    start(c: InnerStart): ((end: CallEnd) => void) | undefined {
      const call: CallStart = {
        transport: 'execute',
        era: undefined,
        method: 'tools/call',
        name: c.name,
        principal: c.principal,
        sessionId: c.sessionId,
        params: c.args === undefined ? { name: c.name } : { name: c.name, arguments: c.args },
        startedAt: c.startedAt,
      };
      let ends: ((end: CallEnd) => void)[] | undefined;
      for (const o of observers) {
        const end = startSafely(o, call);
        if (end !== undefined) (ends ??= []).push(end);
      }
      if (ends === undefined) return undefined;
      return (end) => {
        for (const e of ends) safely(e, end);
      };
    },
  };
}

/**
 * The dispatcher with its requests observed. Without observers and tracer it is the dispatcher
 * itself; with them, one extra closure per request plus what each observer does.
 */
export function observeDispatcher(
  inner: McpDispatcher,
  transport: Transport,
  observers: readonly CallObserver[],
  tracer?: RequestTracer,
): McpDispatcher {
  if (observers.length === 0 && tracer === undefined) return inner;
  const handleRequest: McpDispatcher['handleRequest'] = (msg, scope, abort) => {
    const params = msg.params ?? EMPTY;
    const method = msg.method;
    const startedAt = Date.now();
    const t0 = performance.now();
    const call: CallStart = {
      transport,
      era: scope.era,
      method,
      name: nameOf(method, params),
      principal: scope.principal ?? scope.session?.principal,
      sessionId: scope.session?.id,
      params,
      startedAt,
    };
    // One observer (the metrics alone, the usual case) needs no array of ends per call.
    let only: ((end: CallEnd) => void) | undefined;
    let ends: ((end: CallEnd) => void)[] | undefined;
    for (const o of observers) {
      const end = startSafely(o, call);
      if (end === undefined) continue;
      if (only === undefined && ends === undefined) only = end;
      else {
        ends ??= [only!];
        ends.push(end);
        only = undefined;
      }
    }
    const pending =
      tracer === undefined
        ? inner.handleRequest(msg, scope, abort)
        : tracer.around(
            call,
            msg as JsonRpcRequest,
            () => inner.handleRequest(msg, scope, abort),
            outcomeOf,
          );
    if (only === undefined && ends === undefined) return pending;
    return pending.then((out: string): string => {
      // outcomeOf makes a fresh object; completing it saves a copy per call.
      const end = outcomeOf(method, msg.id, out) as CallEnd;
      end.durationMs = performance.now() - t0;
      if (only !== undefined) safely(only, end);
      else for (const e of ends!) safely(e, end);
      return out;
    });
  };
  return {
    get registry() {
      return inner.registry;
    },
    get serverInfo() {
      return inner.serverInfo;
    },
    get capabilities() {
      return inner.capabilities;
    },
    get observer() {
      return inner.observer;
    },
    get flow() {
      return inner.flow;
    },
    handleRequest,
    handleNotification: (msg, scope) => inner.handleNotification(msg, scope),
    handleResponse: (msg, session) => inner.handleResponse(msg, session),
  };
}
