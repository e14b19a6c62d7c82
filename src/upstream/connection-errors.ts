/**
 * An upstream connection's failures read (connection.ts): the HTTP status or socket error behind
 * an SDK error, whether the connection itself went, and the words a Lua programmer can act on.
 */
import { SdkHttpError } from '@modelcontextprotocol/client';
import { UpstreamError } from './upstream-error.js';

export function statusOf(err: unknown): number | undefined {
  if (err instanceof SdkHttpError) return err.status;
  const e = err as { status?: unknown; code?: unknown; data?: { status?: unknown } };
  if (typeof e?.status === 'number') return e.status;
  if (typeof e?.data?.status === 'number') return e.data.status;
  // The SSE transport reports HTTP failures as SseError with the status as its code.
  if (e && (err as Error).name === 'SseError' && typeof e.code === 'number') return e.code;
  return undefined;
}

/** The socket-level error (ECONNREFUSED, ECONNRESET, ...) somewhere in an error's causes. */
function networkCause(err: unknown): { code: string; message: string } | undefined {
  let cur: unknown = err;
  for (let depth = 0; depth < 6 && cur && typeof cur === 'object'; depth++) {
    const c = cur as {
      code?: unknown;
      message?: string;
      cause?: unknown;
      data?: { cause?: unknown };
      errors?: unknown[];
    };
    if (typeof c.code === 'string' && /^E[A-Z]{3,}/.test(c.code))
      return { code: c.code, message: c.message ?? c.code };
    cur = c.cause ?? c.data?.cause ?? c.errors?.[0];
  }
  return undefined;
}

export function isConnectionError(err: unknown): boolean {
  const text = `${(err as Error)?.message ?? ''} ${(err as { code?: unknown })?.code ?? ''}`;
  return /closed|ECONNREFUSED|ECONNRESET|EPIPE|socket|fetch failed|NOT_CONNECTED|terminated|SSE stream disconnected/i.test(
    text,
  );
}

/** Says what went wrong in words a Lua programmer can act on. */
export function describe(err: unknown, url: string): UpstreamError {
  if (err instanceof UpstreamError) return err;
  const status = statusOf(err);
  const e = err as Error & { code?: unknown };
  const net = networkCause(err);
  if (net?.code === 'ECONNREFUSED')
    return new UpstreamError(`connection refused by ${url}`, undefined, 'ECONNREFUSED');
  if (net) return new UpstreamError(`could not reach ${url}: ${net.message}`, undefined, net.code);
  if (status !== undefined)
    return new UpstreamError(`HTTP ${status} from ${url}: ${e.message}`, status, status);
  const code = typeof e?.code === 'number' ? e.code : undefined;
  if (code !== undefined && code < 0)
    return new UpstreamError(`JSON-RPC error ${code}: ${e.message}`, undefined, code);
  if (typeof e?.code === 'string' && /TIMEOUT/i.test(e.code))
    return new UpstreamError(`timed out waiting for ${url}: ${e.message}`, undefined, e.code);
  return new UpstreamError(e instanceof Error ? e.message : String(err), undefined, code);
}
