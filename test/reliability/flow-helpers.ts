/**
 * Parts of the flow-bound tests: a client that sends one request and never reads the answer (a
 * raw socket, paused), and a 2026-07-28 request body with the headers it needs.
 */
import { connect, type Socket } from 'node:net';

export const MODERN_META = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientCapabilities': {},
};

/** A 2026-07-28 tools/call body asking for progress and every log level. */
export function modernToolCall(id: number, name: string, args: Record<string, unknown>): string {
  return JSON.stringify({
    jsonrpc: '2.0',
    id,
    method: 'tools/call',
    params: {
      name,
      arguments: args,
      _meta: { ...MODERN_META, progressToken: id, 'io.modelcontextprotocol/logLevel': 'debug' },
    },
  });
}

/** Headers of a 2026-07-28 tools/call of `name`. */
export function modernHeaders(name: string): Record<string, string> {
  return {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': '2026-07-28',
    'mcp-method': 'tools/call',
    'mcp-name': name,
  };
}

/**
 * POSTs `body` (or, with `method` GET, asks for a 2025 session's stream) on a raw socket and
 * stops reading right away: the hub's writes back up into its
 * own buffers. A paused socket does not notice that the hub dropped it; `drain()` reads again
 * and resolves with the bytes that came, once the connection ends (or after `timeoutMs`).
 */
export function nonReadingPost(
  url: string,
  body: string,
  headers: Record<string, string>,
  method: 'POST' | 'GET' = 'POST',
): { socket: Socket; drain: (timeoutMs: number) => Promise<{ bytes: number; ended: boolean }> } {
  const u = new URL(url);
  const socket = connect(Number(u.port), u.hostname);
  const head = [
    `${method} ${u.pathname} HTTP/1.1`,
    `Host: ${u.host}`,
    ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`),
    ...(method === 'GET' ? [] : [`Content-Length: ${Buffer.byteLength(body)}`]),
    '',
    '',
  ].join('\r\n');
  socket.write(head + body);
  socket.pause();
  let ended = false;
  const end = new Promise<void>((resolve) => {
    socket.once('close', () => resolve());
    socket.once('error', () => resolve());
  }).then(() => (ended = true));
  const drain = async (timeoutMs: number) => {
    let bytes = 0;
    socket.on('data', (d: Buffer) => (bytes += d.length));
    socket.resume();
    await Promise.race([end, new Promise((r) => setTimeout(r, timeoutMs))]);
    return { bytes, ended };
  };
  return { socket, drain };
}
