/**
 * OpenTelemetry traces, configured by the standard OTEL_* variables and off unless they ask for
 * them (then nothing here is loaded and the hot path has no tracing code at all). Spans follow
 * the OTel MCP semantic conventions: one SERVER span per request named `{method} {target}`, an
 * INTERNAL `execute_tool {name}` span for each tool handler (nested `mcp.call_tool` and
 * `execute` inner calls too), and a CLIENT span per proxied upstream call, whose W3C
 * `traceparent` goes to the upstream in `params._meta` and as a header. The parent is the
 * request's `params._meta.traceparent`, else the HTTP `traceparent` header.
 */
import type { IncomingMessage } from 'node:http';
import {
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  context,
  propagation,
  trace,
  type Context,
  type Span,
  type Tracer,
} from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import {
  defaultResource,
  detectResources,
  envDetector,
  resourceFromAttributes,
} from '@opentelemetry/resources';
import type { Registry } from '../registry/registry.js';
import type { CallEnd, CallStart, OutcomeOf, RequestTracer } from './call-observer.js';
import type { UpstreamCallHook } from '../upstream/call-hook.js';
import { redactUrl } from '../upstream/status-redact.js';
import { packageVersion } from '../server/protocol.js';
import { tracingWanted } from './otel-env.js';

function parentOf(params: Record<string, unknown>): Context {
  const meta = params._meta as Record<string, unknown> | undefined;
  if (meta !== undefined && typeof meta.traceparent === 'string')
    return propagation.extract(context.active(), meta);
  return context.active();
}

function targetAttributes(method: string, name: string | undefined): Record<string, string> {
  if (name === undefined) return {};
  if (method === 'tools/call')
    return { 'gen_ai.tool.name': name, 'gen_ai.operation.name': 'execute_tool' };
  if (method === 'prompts/get') return { 'gen_ai.prompt.name': name };
  if (method === 'resources/read') return { 'mcp.resource.uri': name };
  return {};
}

function spanName(method: string, name: string | undefined): string {
  return name === undefined || method === 'resources/read' ? method : `${method} ${name}`;
}

function endSpan(span: Span, end: Omit<CallEnd, 'durationMs'>): void {
  if (end.outcome === 'error') {
    span.setAttribute('error.type', String(end.errorCode ?? 'error'));
    if (end.errorCode !== undefined) span.setAttribute('rpc.jsonrpc.error_code', end.errorCode);
    span.setStatus({ code: SpanStatusCode.ERROR, message: end.errorMessage });
  } else if (end.outcome === 'tool_error') {
    span.setAttribute('error.type', 'tool_error');
    span.setStatus({ code: SpanStatusCode.ERROR, message: end.errorMessage });
  }
  span.end();
}

class OtelTracer implements RequestTracer {
  constructor(
    private readonly provider: BasicTracerProvider,
    private readonly tracer: Tracer,
  ) {}

  around(
    call: CallStart,
    msg: { id: unknown },
    run: () => Promise<string>,
    outcomeOf: OutcomeOf,
  ): Promise<string> {
    const attributes: Record<string, string | number> = {
      'mcp.method.name': call.method,
      'network.transport': call.transport === 'stdio' ? 'pipe' : 'tcp',
      ...targetAttributes(call.method, call.name),
    };
    if (typeof msg.id === 'string' || typeof msg.id === 'number')
      attributes['jsonrpc.request.id'] = String(msg.id);
    if (call.sessionId !== undefined) attributes['mcp.session.id'] = call.sessionId;
    const span = this.tracer.startSpan(
      spanName(call.method, call.name),
      { kind: SpanKind.SERVER, attributes },
      parentOf(call.params),
    );
    return context.with(trace.setSpan(context.active(), span), run).then(
      (out) => {
        endSpan(span, outcomeOf(call.method, msg.id, out));
        return out;
      },
      (err: unknown) => {
        span.recordException(err as Error);
        endSpan(span, { outcome: 'error', errorMessage: String(err) });
        throw err;
      },
    );
  }

  bindHttp(req: IncomingMessage): void {
    if (req.headers.traceparent === undefined) return;
    context.bind(propagation.extract(ROOT_CONTEXT, req.headers), req);
  }

  upstreamHook(next: UpstreamCallHook | undefined): UpstreamCallHook {
    return (info, run) => {
      const span = this.tracer.startSpan(`${info.method} ${info.name}`, {
        kind: SpanKind.CLIENT,
        attributes: {
          'mcp.method.name': info.method,
          'server.address': redactUrl(info.url),
          ...targetAttributes(info.method, info.name),
        },
      });
      const ctx = trace.setSpan(context.active(), span);
      const meta: Record<string, string> = {};
      propagation.inject(ctx, meta);
      const traced = () => run(meta);
      return context
        .with(ctx, () => (next === undefined ? traced() : next(info, traced)))
        .then(
          (result) => {
            const toolError = (result as { isError?: boolean })?.isError === true;
            endSpan(span, { outcome: toolError ? 'tool_error' : 'ok' });
            return result;
          },
          (err: unknown) => {
            span.recordException(err as Error);
            endSpan(span, { outcome: 'error', errorMessage: (err as Error)?.message });
            throw err;
          },
        );
    };
  }

  instrument(registry: Registry): void {
    // callResolved is where every tool call ends up (callTool resolves, then calls it; the
    // dispatcher resolves once and calls it directly).
    const callResolved = registry.callResolved.bind(registry);
    const tracer = this.tracer;
    registry.callResolved = (tool, args, ctx, filter) => {
      const name = tool.info.name;
      const owner = tool.entry.owner;
      const span = tracer.startSpan(`execute_tool ${name}`, {
        kind: SpanKind.INTERNAL,
        attributes: {
          'gen_ai.operation.name': 'execute_tool',
          'gen_ai.tool.name': name,
          ...(owner === undefined ? {} : { 'moonhub.plugin': owner }),
        },
      });
      return context
        .with(trace.setSpan(context.active(), span), () => callResolved(tool, args, ctx, filter))
        .then(
          (result) => {
            endSpan(span, { outcome: result.isError === true ? 'tool_error' : 'ok' });
            return result;
          },
          (err: unknown) => {
            endSpan(span, { outcome: 'error', errorMessage: (err as Error)?.message });
            throw err;
          },
        );
    };
  }

  shutdown(): Promise<void> {
    return this.provider.shutdown();
  }
}

/** Starts the OTel SDK from OTEL_* variables; undefined when tracing is not asked for. */
export function startTracing(env: NodeJS.ProcessEnv = process.env): RequestTracer | undefined {
  if (!tracingWanted(env)) return undefined;
  const resource = defaultResource()
    .merge(
      resourceFromAttributes({
        'service.name': 'moonhub',
        'service.version': packageVersion(),
      }),
    )
    .merge(detectResources({ detectors: [envDetector] }));
  const provider = new BasicTracerProvider({
    resource,
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter())],
  });
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(provider);
  return new OtelTracer(provider, provider.getTracer('moonhub', packageVersion()));
}
