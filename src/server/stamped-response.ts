/**
 * Headers every response of a server carries (the cluster modes' `X-Moonhub-Instance`), added
 * where the head is written instead of with a `setHeader` per request: a `setHeader` before the
 * answer costs its own validation and sends `writeHead` down Node's slow path (each header set
 * again one by one and merged), on every request.
 */
import { ServerResponse, type IncomingMessage, type OutgoingHttpHeaders } from 'node:http';

type HeadArgs = [statusMessage?: unknown, headers?: unknown];

/** A ServerResponse class whose every head also carries `stamp`. */
export function stampedResponse(stamp: Record<string, string>): typeof ServerResponse {
  // A flat name, value list: what the answer's own flat header array is extended with.
  const headers = Object.entries(stamp).flat();
  return class StampedResponse<
    Request extends IncomingMessage = IncomingMessage,
  > extends ServerResponse<Request> {
    override writeHead(statusCode: number, ...args: HeadArgs): this {
      const last = args.length - 1;
      const given = last >= 0 && typeof args[last] !== 'string' ? args[last] : undefined;
      let stamped: unknown;
      if (given === undefined || given === null) {
        // No headers given (also the implicit head of a write without writeHead): what
        // setHeader set stays, ours are added to it.
        for (let i = 0; i < headers.length; i += 2)
          if (!this.hasHeader(headers[i]!)) this.setHeader(headers[i]!, headers[i + 1]!);
        stamped = given;
      } else if (Array.isArray(given)) {
        stamped = Array.isArray(given[0])
          ? [...(given as unknown[]), ...pairsOf(headers)]
          : [...(given as unknown[]), ...headers];
      } else {
        stamped = { ...(given as OutgoingHttpHeaders) };
        for (let i = 0; i < headers.length; i += 2)
          (stamped as OutgoingHttpHeaders)[headers[i]!] = headers[i + 1]!;
      }
      if (last >= 0 && typeof args[last] !== 'string') args[last] = stamped;
      return (super.writeHead as (code: number, ...rest: unknown[]) => this)(statusCode, ...args);
    }
  };
}

function pairsOf(flat: readonly string[]): [string, string][] {
  const out: [string, string][] = [];
  for (let i = 0; i < flat.length; i += 2) out.push([flat[i]!, flat[i + 1]!]);
  return out;
}
