/**
 * The `execute` built-in tool (LUA_API §3.6): runs an agent's Lua chunk in a fresh sandboxed
 * state on a worker thread, seeing exactly the caller's tools, and answers
 * `structuredContent = {result, output}` with the pictures of the result as image items.
 */
import { context } from '@opentelemetry/api';
import type { Logger } from '../log.js';
import { registryCaller, type ToolCaller } from '../lua-api/tool-caller.js';
import type { Registry } from '../registry/registry.js';
import { extractImages } from '../registry/result-images.js';
import { toJsonText } from '../registry/results.js';
import type { CallContext, ToolResult } from '../registry/types.js';
import { directPlan, type DirectPlan } from './direct-plan.js';
import { observeHubCalls, replayDirectCalls, type InnerCallSink } from './inner-observe.js';
import type { RefusalReport } from '../lua-api/inner-refusals.js';
import { innerNameRefusal, type InnerRateGate, type ResolvedExecuteOptions } from './options.js';
import type { ScriptOutcome, ScriptPool } from './worker-pool.js';

export const EXECUTE_OWNER = 'builtin:execute';

export const EXECUTE_DESCRIPTION = `Run a Lua 5.4 script that calls other tools, filters their results and returns only what matters: one round trip instead of many.
API: mcp.call(name, args) starts a call and returns an id at once; task.await(id) or task.await({id1, id2, ...}) waits and returns {id, is_error, content} (content = the result text); mcp.poll(id) returns nil while running. tools.use(name, args) waits and returns the decoded result (structuredContent or parsed JSON), raising on a tool error. mcp.listTools() names the tools you may call. mcp.image(pathOrBytes) makes a picture you can return. print() output is captured; notice(text) sends a progress message. json.encode/json.decode, string, table, math, utf8 are available; io and os.execute are not.
The chunk's return value comes back as {result, output}. Example:
  local ids = {}
  for _, city in ipairs({"Paris", "Oslo", "Rome"}) do ids[#ids + 1] = mcp.call("weather", {city = city}) end
  local out = {}
  for i, r in ipairs(task.await(ids)) do out[i] = r.is_error and "?" or r.content end
  return out`;

/**
 * Why a finished script's leftover inner calls are aborted: made once, as `abort()` without a
 * reason builds a DOMException (with its stack) on every run.
 */
const SCRIPT_ENDED = new DOMException('the script ended', 'AbortError');

/**
 * The tool names a script may see, kept per view and registry version: listing (and copying to
 * the worker) the whole catalogue on every run cost more than the run with big catalogues. The
 * views layer hands out one filter function per principal and view generation, so a view that
 * changed is a new key; a registry change bumps the version.
 */
function toolNamesCache(registry: Registry, gate: InnerRateGate | undefined) {
  const byView = new WeakMap<object, ViewTools>();
  const all = {};
  return (filter: CallContext['filter'], caller: ToolCaller): ViewTools => {
    const key = filter ?? all;
    const version = registry.versions.tools;
    const hit = byView.get(key);
    if (hit?.version === version) return hit;
    const names = caller.listTools();
    // A rate-limited tool's inner calls stay on the hub's path, where its bucket is taken.
    const direct = directPlan(registry, gate ? names.filter((n) => !gate.limits(n)) : names);
    const entry = { version, names, direct };
    byView.set(key, entry);
    return entry;
  };
}

/** A view's tool names and which of them a run may call directly (direct-plan.ts). */
interface ViewTools {
  version: number;
  names: string[];
  direct: DirectPlan | undefined;
}

/**
 * A script reaches every tool the caller sees except execute itself. At module level: a closure
 * made in the handler would share the handler's context (the request, the run) and, kept in the
 * run's view by the plugins' finished calls, hold it long after the run.
 */
const hideExecute = (owner: string): boolean => owner === EXECUTE_OWNER;

export function executeHandler(
  registry: Registry,
  pool: ScriptPool,
  opts: ResolvedExecuteOptions,
  logger: Logger,
  /** Where inner calls are announced (the hub's observers), once operations start. */
  sinkOf: () => InnerCallSink | undefined = () => undefined,
) {
  const gate = opts.innerRate;
  const toolNames = toolNamesCache(registry, gate);
  return async (args: Record<string, unknown>, ctx: CallContext): Promise<ToolResult> => {
    const code = String(args.code);
    const timeoutMs = Math.min(
      typeof args.timeout_ms === 'number' ? args.timeout_ms : opts.timeoutMs,
      opts.maxTimeoutMs,
    );
    const inner = new AbortController();
    const sink = sinkOf();
    const caller = scriptCaller(registry, ctx, inner.signal, logger, opts, sink);
    try {
      const tools = toolNames(ctx.filter, caller);
      const outcome = await pool.run({
        code,
        timeoutMs,
        caller,
        tools: tools.names,
        direct: tools.direct,
        signal: ctx.signal,
        principal: ctx.principal,
        observe: sink === undefined ? undefined : sink.wantsArguments ? 2 : 1,
      });
      // Refused in the script's worker, before anything crossed: counted here, as it reports.
      if (outcome.nameRefusals !== undefined) opts.onRefused?.('name_length', outcome.nameRefusals);
      if (outcome.noticeRefusals !== undefined)
        opts.onRefused?.('execute_messages_per_second', outcome.noticeRefusals);
      const log = outcome.directLog;
      // After the answer is out: the caller does not wait for the observers.
      if (sink !== undefined && log !== undefined)
        setImmediate(() => replayDirectCalls(sink, ctx, log));
      return toolResultOf(outcome);
    } finally {
      inner.abort(SCRIPT_ENDED);
    }
  };
}

/** A run's outcome as the `execute` tool's result. */
function toolResultOf(outcome: ScriptOutcome): ToolResult {
  if (!outcome.ok) {
    const text = outcome.output
      ? `${outcome.error}\n--- output ---\n${outcome.output}`
      : outcome.error;
    return {
      content: [{ type: 'text', text }],
      isError: true,
      structuredContent: { error: outcome.error, output: outcome.output },
    };
  }
  const structured = { result: outcome.result ?? null, output: outcome.output };
  return {
    content: [{ type: 'text', text: toJsonText(structured) }, ...outcome.images],
    structuredContent: structured,
  };
}

/**
 * The caller a run's script acts through: the caller's view less `execute` itself, inner calls
 * rate-limited and observed as configured, bound to this call's trace context. Built once, from
 * functions of their own: a closure stored in the caller shares the context of the function
 * that made it, and one made in the handler (or assigned onto the caller) kept the run's whole
 * request alive past the young generation, ~5 KB a run (docs/performance.md, "Session 10").
 */
function scriptCaller(
  registry: Registry,
  ctx: CallContext,
  signal: AbortSignal,
  logger: Logger,
  opts: ResolvedExecuteOptions,
  sink: InnerCallSink | undefined,
): ToolCaller {
  const base = registryCaller({
    registry,
    ctx,
    hide: hideExecute,
    signal,
    notice: noticeTo(ctx, logger),
  });
  // The name bound first, as at the front door: what follows keeps the name (rate buckets,
  // observers). The script's worker refuses such names already; this holds whatever sends them.
  let call = boundedNames(base.call, opts.nameLength, opts.onRefused);
  const gate = opts.innerRate;
  if (gate !== undefined) call = rateLimited(call, gate, ctx.principal);
  if (sink !== undefined) call = observeHubCalls(call, sink, ctx);
  // observe: inner calls answer worker messages, outside this call's async context; bound to
  // it, their trace spans nest under this call's (a no-op while tracing is off).
  call = context.bind(context.active(), call);
  return { call, listTools: base.listTools, notice: base.notice, context: base.context };
}

/** A script's `notice`: progress and a log message to the caller (or the hub's log). */
function noticeTo(ctx: CallContext, logger: Logger): (text: string, params: unknown) => void {
  let notices = 0;
  return (text, params) => {
    let data: Record<string, unknown>;
    try {
      const pictures = extractImages(params ?? null);
      data = { text, params: pictures.value ?? null, images: pictures.images };
    } catch (err) {
      data = { text, error: (err as Error).message };
    }
    notices++;
    if (!ctx.peer) {
      logger.info({ source: 'notice', ...data }, text);
      return;
    }
    try {
      ctx.peer.progress(notices, undefined, text);
      ctx.peer.log('info', data, 'execute');
    } catch (err) {
      // A notice is best effort: a caller that went away must not fail the script.
      logger.debug({ err }, 'could not send a notice to the caller');
    }
  };
}

/**
 * Inner calls naming a tool past `limits.name_length` fail with the front door's error, counted
 * as its refusals are.
 */
function boundedNames(
  call: ToolCaller['call'],
  max: number,
  refused: RefusalReport | undefined,
): ToolCaller['call'] {
  return (name, args) => {
    const tooLong = innerNameRefusal(name, max);
    if (tooLong === undefined) return call(name, args);
    refused?.('name_length', 1);
    return Promise.reject(tooLong);
  };
}

/**
 * Inner calls take their (principal, tool) token as the caller's own tools/call would: a script
 * must not be a way around `limits.rate.tool`. A refused call fails like any inner call that
 * fails (the script sees the error and may wait and retry).
 */
function rateLimited(call: ToolCaller['call'], gate: InnerRateGate, principal?: string) {
  return (name: string, args: Record<string, unknown>): Promise<ToolResult> => {
    const refusal = gate.take(principal, name);
    if (refusal === undefined) return call(name, args);
    const { limit, retryAfterMs } = refusal;
    return Promise.reject(
      new Error(
        `Rate limit exceeded for tool '${name}' (${limit}); retry after ${retryAfterMs} ms`,
      ),
    );
  };
}
