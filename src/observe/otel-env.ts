/**
 * Whether the OTEL_* variables ask for traces, decided without loading the OpenTelemetry SDK:
 * serve imports tracing.ts (and the SDK) only when they do.
 */

/** Tracing is on when an OTLP exporter is asked for and the SDK is not disabled. */
export function tracingWanted(env: NodeJS.ProcessEnv = process.env): boolean {
  if ((env.OTEL_SDK_DISABLED ?? '').toLowerCase() === 'true') return false;
  const exporter = (env.OTEL_TRACES_EXPORTER ?? '').toLowerCase();
  if (exporter === 'none') return false;
  return (
    exporter.split(',').includes('otlp') ||
    Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT) ||
    Boolean(env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT)
  );
}
