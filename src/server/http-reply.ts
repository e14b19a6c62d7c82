/**
 * How the HTTP transport writes its answers: JSON with a Content-Length, a one-event stream for
 * clients that accept only SSE, 202 for what needs no answer, and registered errors with their
 * status.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { WireError } from '../errors.js';
import { serializeWireError, type JsonRpcId } from './jsonrpc.js';

export function sendJson(
  res: ServerResponse,
  status: number,
  body: string,
  headers?: Record<string, string>,
): void {
  // A Content-Length (instead of chunked encoding) lets the client finish reading without a trailer.
  const length = String(Buffer.byteLength(body));
  res.writeHead(
    status,
    headers
      ? { 'Content-Type': 'application/json', 'Content-Length': length, ...headers }
      : { 'Content-Type': 'application/json', 'Content-Length': length },
  );
  res.end(body);
}

/**
 * The hot path's JSON answer (a tools/call's result): head and body in one `writeHead` + `end`,
 * the headers as a flat array (Node walks it without the `for...in` and own-property checks an
 * object costs) and nothing else per answer.
 */
export function sendJsonAnswer(
  res: ServerResponse,
  status: number,
  body: string,
  sessionId: string | undefined,
): void {
  const length = String(Buffer.byteLength(body));
  res.writeHead(
    status,
    sessionId === undefined
      ? ['Content-Type', 'application/json', 'Content-Length', length]
      : ['Content-Type', 'application/json', 'Content-Length', length, 'Mcp-Session-Id', sessionId],
  );
  res.end(body);
}

/** Answers with a registered error at its HTTP status. */
export function sendError(
  res: ServerResponse,
  error: WireError,
  id: JsonRpcId | null = null,
  headers?: Record<string, string>,
): void {
  sendJson(res, error.status, serializeWireError(id, error), headers);
}

/** A refusal at 429 tells the client when to come back (whole seconds, at least 1). */
export function retryAfter(error: WireError): Record<string, string> | undefined {
  if (error.status !== 429) return undefined;
  const ms = (error.data as { retryAfterMs?: number } | undefined)?.retryAfterMs ?? 1000;
  return { 'Retry-After': String(Math.max(1, Math.ceil(ms / 1000))) };
}

/** JSON unless the client accepts only an event stream. */
export function wantsSse(req: IncomingMessage): boolean {
  const accept = req.headers.accept;
  return (
    accept !== undefined &&
    !accept.includes('application/json') &&
    !accept.includes('*/*') &&
    accept.includes('text/event-stream')
  );
}

/** Writes a one-shot SSE response holding a single message (a POST answered as a stream). */
export function writeSingleEventResponse(
  res: ServerResponse,
  json: string,
  headers: Record<string, string> = {},
): void {
  res.writeHead(200, {
    'Content-Type': 'text/event-stream',
    'Cache-Control': 'no-cache, no-transform',
    ...headers,
  });
  res.end('event: message\ndata: ' + json + '\n\n');
}

/** A 200 answer in the form the client asked for. */
export function respond(
  req: IncomingMessage,
  res: ServerResponse,
  out: string,
  headers?: Record<string, string>,
): void {
  if (wantsSse(req)) writeSingleEventResponse(res, out, headers);
  else sendJson(res, 200, out, headers);
}

/** `respond` for the answer of one request: at most a session id besides the body. */
export function respondAnswer(
  req: IncomingMessage,
  res: ServerResponse,
  out: string,
  sessionId: string | undefined,
): void {
  if (wantsSse(req))
    writeSingleEventResponse(
      res,
      out,
      sessionId === undefined ? {} : { 'Mcp-Session-Id': sessionId },
    );
  else sendJsonAnswer(res, 200, out, sessionId);
}

export function accepted(res: ServerResponse): void {
  res.writeHead(202);
  res.end();
}

export function headerOf(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}
