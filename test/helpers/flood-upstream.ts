/**
 * A hostile MCP upstream on node:http: a proper handshake, tools/list and tools/call, then a
 * flood on the server-to-client GET stream: `ping` requests (each asks the hub for an answer,
 * which the hub POSTs back), `notifications/tools/list_changed` or 8 KB `notifications/message`, written as fast as the socket
 * takes them (or one every `everyMs`) until `stop()`. It counts what the hub sent back. The same server as a stdio child
 * is `STDIO_FLOOD_SCRIPT` (a file a test writes and runs with node).
 */
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export type Flood = 'ping' | 'list_changed' | 'log';

export interface FloodUpstream {
  url: string;
  server: Server;
  /** Messages written on GET streams so far. */
  sent: number;
  /** Answers (responses to its requests) the hub POSTed back. */
  answers: number;
  /** Requests the hub made, by method. */
  requests: Record<string, number>;
  /** When above 0: one message every `everyMs` ms instead of as fast as the socket takes them. */
  everyMs: number;
  /** What tools/list lists, made anew at each listing (one `work` tool unless set). */
  toolsList?: () => unknown[];
  /** Stops flooding (streams stay open). */
  stop(): void;
  close(): Promise<void>;
}

function floodMessage(kind: Flood, id: number): string {
  const msg =
    kind === 'ping'
      ? { jsonrpc: '2.0', id: `p${id}`, method: 'ping' }
      : kind === 'log'
        ? {
            jsonrpc: '2.0',
            method: 'notifications/message',
            params: { level: 'info', logger: 'flood', data: `${'L'.repeat(8000)} ${id}` },
          }
        : { jsonrpc: '2.0', method: 'notifications/tools/list_changed' };
  return `event: message\ndata: ${JSON.stringify(msg)}\n\n`;
}

/** Writes the flood in batches, waiting for the socket to drain (no memory grows here). */
function pour(res: ServerResponse, kind: Flood, up: FloodUpstream, running: () => boolean): void {
  let last = 0;
  // Looks at `everyMs` at least every 20 ms, so a test can change the pace at any time.
  const paced = (): void => {
    if (!running() || res.destroyed) return;
    if (up.everyMs <= 0) return batch();
    if (performance.now() - last >= up.everyMs) {
      last = performance.now();
      res.write(floodMessage(kind, up.sent++));
    }
    setTimeout(paced, Math.min(up.everyMs, 20));
  };
  const batch = (): void => {
    while (running() && !res.destroyed) {
      let chunk = '';
      for (let i = 0; i < 500; i++) chunk += floodMessage(kind, up.sent++);
      if (!res.write(chunk)) {
        res.once('drain', batch);
        return;
      }
      if (up.everyMs > 0) return paced();
    }
  };
  setImmediate(paced);
}

export async function startFloodUpstream(kind: Flood): Promise<FloodUpstream> {
  let flooding = true;
  const streams = new Set<ServerResponse>();
  const up = { sent: 0, answers: 0, requests: {}, everyMs: 0 } as unknown as FloodUpstream;
  up.stop = () => (flooding = false);
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (d: Buffer) => (body += d.toString()));
    req.on('end', () => {
      if (req.method === 'GET') {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.flushHeaders();
        streams.add(res);
        res.on('close', () => streams.delete(res));
        pour(res, kind, up, () => flooding);
        return;
      }
      if (req.method !== 'POST') {
        res.writeHead(405).end();
        return;
      }
      const msg = JSON.parse(body) as { id?: unknown; method?: string };
      if (msg.method === undefined) {
        up.answers++;
        res.writeHead(202).end();
        return;
      }
      up.requests[msg.method] = (up.requests[msg.method] ?? 0) + 1;
      if (msg.id === undefined) {
        res.writeHead(202).end();
        return;
      }
      const reply = (result: unknown) => {
        res.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': 'flood-1' });
        res.end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result }));
      };
      if (msg.method === 'initialize')
        return reply({
          protocolVersion: '2025-06-18',
          capabilities: { tools: { listChanged: true } },
          serverInfo: { name: 'flood', version: '1.0.0' },
        });
      if (msg.method === 'tools/list')
        return reply({
          tools: up.toolsList?.() ?? [{ name: 'work', inputSchema: { type: 'object' } }],
        });
      if (msg.method === 'tools/call')
        return reply({ content: [{ type: 'text', text: 'worked' }] });
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          jsonrpc: '2.0',
          id: msg.id,
          error: { code: -32601, message: `Method not found: ${msg.method}` },
        }),
      );
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  up.server = server;
  up.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
  up.close = () =>
    new Promise<void>((r) => {
      flooding = false;
      for (const s of streams) s.destroy();
      server.closeAllConnections();
      server.close(() => r());
    });
  return up;
}

/**
 * The same upstream over stdio (a node script): after `notifications/initialized` it writes
 * `ping` requests to stdout as fast as the pipe takes them, and appends a line to the file in
 * argv[2] every 1000 answers the hub wrote back ("answers N").
 */
export const STDIO_FLOOD_SCRIPT = `
import { appendFileSync } from 'node:fs';
const log = process.argv[2];
let answers = 0, sent = 0, buf = '';
const out = (m) => process.stdout.write(JSON.stringify(m) + '\\n');
function flood() {
  for (;;) {
    let chunk = '';
    for (let i = 0; i < 500; i++) chunk += JSON.stringify({ jsonrpc: '2.0', id: 'p' + sent++, method: 'ping' }) + '\\n';
    if (!process.stdout.write(chunk)) return process.stdout.once('drain', flood);
  }
}
process.stdin.on('data', (d) => {
  buf += d.toString();
  let nl;
  while ((nl = buf.indexOf('\\n')) >= 0) {
    const line = buf.slice(0, nl);
    buf = buf.slice(nl + 1);
    if (!line.trim()) continue;
    const m = JSON.parse(line);
    if (m.method === undefined) {
      if (++answers % 1000 === 0) appendFileSync(log, 'answers ' + answers + '\\n');
      continue;
    }
    if (m.method === 'initialize')
      out({ jsonrpc: '2.0', id: m.id, result: { protocolVersion: '2025-06-18', capabilities: { tools: {} }, serverInfo: { name: 'flood', version: '1' } } });
    else if (m.method === 'notifications/initialized') setImmediate(flood);
    else if (m.method === 'tools/list')
      out({ jsonrpc: '2.0', id: m.id, result: { tools: [{ name: 'work', inputSchema: { type: 'object' } }] } });
    else if (m.method === 'tools/call')
      out({ jsonrpc: '2.0', id: m.id, result: { content: [{ type: 'text', text: 'worked' }] } });
    else if (m.id !== undefined)
      out({ jsonrpc: '2.0', id: m.id, error: { code: -32601, message: 'Method not found' } });
  }
});
`;
