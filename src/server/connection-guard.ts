/**
 * Bounds on the TCP connections of the HTTP server (`limits.connections`), before any request
 * and so before any principal is known. Node keeps a connection that never sends a byte for ever
 * and accepts as many as the process has file descriptors: measured, 20,000 idle connections from
 * one client took every descriptor of a hub (+105 MiB), after which no client was served, and the
 * hub's own files, plugin workers and upstream sockets could not open either. Here a connection
 * must deliver its first request's headers in time, one client address holds a bounded share, and
 * the whole stays under the descriptor limit with room for the hub's own.
 */
import { readFileSync } from 'node:fs';
import type { IncomingMessage, Server } from 'node:http';
import type { Socket } from 'node:net';

/** Descriptors kept for the hub's own use (files, plugin workers, upstreams, Redis). */
const DESCRIPTOR_RESERVE = 256;
const MAX_DEFAULT_TOTAL = 16_384;

/** The soft limit on open files of this process (Linux), or undefined when unknown. */
export function openFileLimit(limits = '/proc/self/limits'): number | undefined {
  try {
    const line = /^Max open files\s+(\d+|unlimited)/m.exec(readFileSync(limits, 'utf8'));
    if (line === null) return undefined;
    return line[1] === 'unlimited' ? Number.MAX_SAFE_INTEGER : Number(line[1]);
  } catch {
    return undefined;
  }
}

/**
 * The default of `limits.connections.total`: 16,384 (~90 MiB of idle connections), or three
 * quarters of what the descriptor limit leaves after the hub's reserve when that is lower (a
 * default `ulimit -n` of 1,024: 576; 20,000: 14,808).
 */
export function defaultConnectionsTotal(nofile = openFileLimit()): number {
  if (nofile === undefined) return MAX_DEFAULT_TOTAL;
  return Math.max(
    16,
    Math.min(MAX_DEFAULT_TOTAL, Math.floor(((nofile - DESCRIPTOR_RESERVE) * 3) / 4)),
  );
}

export interface ConnectionLimits {
  /** Connections open at once (`limits.connections.total`); past it new ones are closed. */
  connectionsTotal: number;
  /** Connections of one client address (`limits.connections.per_address`). */
  connectionsPerAddress: number;
  /** Time a new connection has to deliver its first request's headers (and any request's). */
  connectionHeadersMs: number;
}

/** Marks a connection that has not delivered a request yet (its timer still armed). */
const FRESH = Symbol('moonhub.freshConnection');
type Tracked = Socket & { [FRESH]?: boolean };

/**
 * Puts the bounds on `server`. Call `served(req)` at the top of the request handler: it disarms
 * the first-request timer (one property check a request).
 */
export function guardConnections(
  server: Server,
  limits: ConnectionLimits,
  /** Told the limit's name at every refusal (session-limits' RefusalCounter). */
  refused?: (limit: string) => void,
): { served(req: IncomingMessage): void; readonly open: number } {
  const perAddress = new Map<string, number>();
  let open = 0;
  server.maxConnections = limits.connectionsTotal;
  // Node closes a connection past maxConnections at once and says so here.
  server.on('drop', () => refused?.('connections'));
  // Partial headers of any request; Node requires requestTimeout to be at least this.
  server.headersTimeout = limits.connectionHeadersMs;
  if (server.requestTimeout > 0 && server.requestTimeout < limits.connectionHeadersMs)
    server.requestTimeout = limits.connectionHeadersMs;
  server.on('connection', (socket: Tracked) => {
    const address = socket.remoteAddress ?? '';
    const held = perAddress.get(address) ?? 0;
    if (held >= limits.connectionsPerAddress) {
      refused?.('connections_per_address');
      socket.destroy();
      return;
    }
    perAddress.set(address, held + 1);
    open++;
    socket.once('close', () => {
      open--;
      const n = (perAddress.get(address) ?? 1) - 1;
      if (n > 0) perAddress.set(address, n);
      else perAddress.delete(address);
    });
    // No request yet: the server's timeout handling destroys the socket when this fires.
    socket[FRESH] = true;
    socket.setTimeout(limits.connectionHeadersMs);
  });
  return {
    served(req) {
      const socket = req.socket as Tracked;
      if (socket[FRESH] !== true) return;
      socket[FRESH] = false;
      socket.setTimeout(0);
    },
    get open() {
      return open;
    },
  };
}
