/**
 * A tiny misbehaving MCP server on node:http for fault tests: it answers the handshake and
 * tools/list properly (JSON responses, one session id), then treats tools/call as told: hang,
 * answer 500, or answer bytes that are not JSON. `connect: 'hang'` never answers at all.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * `poll`: tools/call answers with an event stream that carries only an event id and ends; the
 * answer comes on the GET that resumes it (`Last-Event-ID`), as in 2025-11-25 SSE polling.
 */
export type FakeMode =
  | 'ok'
  | 'hang'
  | '500'
  | 'garbage'
  | 'poll'
  | 'iserror'
  /** A result as given in `fake.result`, serialised. */
  | 'result'
  /** `fake.raw` sent as the body, `ID` replaced by the request's id (JSON). */
  | 'raw'
  /** An event stream whose answer event is `fake.raw` (`ID` replaced). */
  | 'raw-sse'
  /** The call's `arguments` as JSON text (concurrent calls matched to their answers). */
  | 'echo'
  /** Calls taken in pairs, each answered with the other's id (a server mixing up answers). */
  | 'swap';

export interface FakeUpstream {
  url: string;
  server: Server;
  /** What tools/call does from now on. */
  mode: FakeMode;
  /** When true, even initialize never gets an answer. */
  hangAll: boolean;
  /** When set, requests without `Authorization: Bearer <token>` get 401. */
  token?: string;
  /** Status answered to a session id the server does not know (404 by the spec; some send 400). */
  unknownSessionStatus: number;
  /** Forgets every session, as a restarted server would. */
  forgetSessions: () => void;
  requests: string[];
  /** The params of every tools/call received (its `_meta` included). */
  calls: Record<string, unknown>[];
  /** TCP connections accepted so far. */
  connections: number;
  /** Requests that arrived while an earlier one on their connection was unanswered (pipelined). */
  pipelined: number;
  /** Extra tools that tools/list lists after `work` (a hostile upstream's definitions). */
  extraTools?: unknown[];
  /** When set (before the hub connects): resources declared, and resources/list lists these. */
  resources?: unknown[];
  /** When set, tools/list answers with this result for the request's cursor (pagination). */
  listPage?: (cursor: string | undefined) => unknown;
  /** Mode 'result': the tools/call result. */
  result?: unknown;
  /** Modes 'raw' and 'raw-sse': the answer's text, `ID` standing for the request's id. */
  raw?: string;
  close: () => Promise<void>;
}

export async function startFakeUpstream(): Promise<FakeUpstream> {
  const fake = {
    mode: 'ok',
    hangAll: false,
    requests: [],
    calls: [],
    connections: 0,
    pipelined: 0,
    unknownSessionStatus: 404,
  } as unknown as FakeUpstream;
  const sessions = new Set<string>();
  let nextSession = 1;
  /** poll mode: the tools/call waiting for its GET. */
  let polled: unknown;
  /** swap mode: the first call of a pair, waiting for the second. */
  let swapped: { id: unknown; reply: (id: unknown) => void } | undefined;
  fake.forgetSessions = () => sessions.clear();
  const waiting = new WeakMap<object, number>();
  const server = createServer((req, res) => {
    const n = waiting.get(req.socket) ?? 0;
    if (n > 0) fake.pipelined++;
    waiting.set(req.socket, n + 1);
    res.on('finish', () => waiting.set(req.socket, (waiting.get(req.socket) ?? 1) - 1));
    let body = '';
    req.on('data', (d: Buffer) => (body += d.toString()));
    req.on('end', () => {
      if (fake.hangAll) return;
      if (fake.token && req.headers.authorization !== `Bearer ${fake.token}`) {
        res.writeHead(401, { 'www-authenticate': 'Bearer' }).end();
        return;
      }
      if (req.method === 'GET' && req.headers['last-event-id'] !== undefined) {
        fake.requests.push(`GET last-event-id=${String(req.headers['last-event-id'])}`);
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        const result = { content: [{ type: 'text', text: 'worked after polling' }] };
        res.end(`id: ev-2\ndata: ${JSON.stringify({ jsonrpc: '2.0', id: polled, result })}\n\n`);
        return;
      }
      if (req.method !== 'POST') {
        if (req.method === 'DELETE') fake.requests.push('DELETE');
        res.writeHead(405).end();
        return;
      }
      const msg = JSON.parse(body) as {
        id?: number;
        method: string;
        params?: Record<string, unknown>;
      };
      fake.requests.push(msg.method);
      let session = req.headers['mcp-session-id'] as string | undefined;
      if (msg.method === 'initialize') {
        session = `fake-${nextSession++}`;
        sessions.add(session);
      } else if (session !== undefined && !sessions.has(session)) {
        res.writeHead(fake.unknownSessionStatus, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            jsonrpc: '2.0',
            id: null,
            error: { code: -32001, message: 'Session not found' },
          }),
        );
        return;
      }
      const reply = (result: unknown) => {
        res.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': session ?? '' });
        res.end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result }));
      };
      if (msg.id === undefined) {
        res.writeHead(202).end();
        return;
      }
      switch (msg.method) {
        case 'initialize':
          return reply({
            protocolVersion: '2025-06-18',
            capabilities: fake.resources ? { tools: {}, resources: {} } : { tools: {} },
            serverInfo: { name: 'fake', version: '1.0.0' },
          });
        case 'resources/list':
          return reply({ resources: fake.resources ?? [] });
        case 'resources/templates/list':
          return reply({ resourceTemplates: [] });
        case 'tools/list':
          if (fake.listPage) return reply(fake.listPage(msg.params?.cursor as string | undefined));
          return reply({
            tools: [
              { name: 'work', description: 'does work', inputSchema: { type: 'object' } },
              ...(fake.extraTools ?? []),
            ],
          });
        case 'tools/call':
          fake.calls.push(msg.params ?? {});
          if (fake.mode === 'hang') return;
          if (fake.mode === 'result') return reply(fake.result);
          if (fake.mode === 'raw' || fake.mode === 'raw-sse') {
            const text = (fake.raw ?? '').replaceAll('ID', JSON.stringify(msg.id));
            if (fake.mode === 'raw') {
              // In two writes: chunked, no Content-Length (the answer is read and counted).
              const half = Math.floor(text.length / 2);
              res.writeHead(200, { 'content-type': 'application/json' });
              res.write(text.slice(0, half));
              res.end(text.slice(half));
            } else {
              res.writeHead(200, { 'content-type': 'text/event-stream' });
              res.end(`event: message\ndata: ${text}\n\n`);
            }
            return;
          }
          if (fake.mode === 'echo') {
            const text = JSON.stringify(msg.params?.arguments ?? {});
            return reply({ content: [{ type: 'text', text }] });
          }
          if (fake.mode === 'swap') {
            const answer = (id: unknown) => {
              res.writeHead(200, { 'content-type': 'application/json' });
              res.end(JSON.stringify({ jsonrpc: '2.0', id, result: { content: [] } }));
            };
            if (swapped === undefined) swapped = { id: msg.id, reply: answer };
            else {
              swapped.reply(msg.id);
              answer(swapped.id);
              swapped = undefined;
            }
            return;
          }
          if (fake.mode === 'iserror') {
            return reply({
              content: [
                { type: 'text', text: 'Marking owner/repo#84 ready for review...' },
                { type: 'text', text: 'GitHub did not confirm it.' },
              ],
              isError: true,
            });
          }
          if (fake.mode === 'poll') {
            polled = msg.id;
            res.writeHead(200, { 'content-type': 'text/event-stream' });
            res.end('id: ev-1\nretry: 50\ndata: \n\n');
            return;
          }
          if (fake.mode === '500') {
            res.writeHead(500, { 'content-type': 'text/plain' }).end('internal failure');
            return;
          }
          if (fake.mode === 'garbage') {
            res.writeHead(200, { 'content-type': 'application/json' }).end('{"jsonrpc": nonsense');
            return;
          }
          return reply({ content: [{ type: 'text', text: 'worked' }] });
        default:
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(
            JSON.stringify({
              jsonrpc: '2.0',
              id: msg.id,
              error: { code: -32601, message: `Method not found: ${msg.method}` },
            }),
          );
      }
    });
  });
  server.on('connection', () => fake.connections++);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  fake.server = server;
  fake.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
  fake.close = () =>
    new Promise<void>((r) => {
      server.closeAllConnections();
      server.close(() => r());
    });
  return fake;
}

/** An address where nothing listens (a port just released), for connection-refused tests. */
export async function refusedUrl(): Promise<string> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  await new Promise<void>((r) => server.close(() => r()));
  return `http://127.0.0.1:${port}/mcp`;
}
