/**
 * The official SDK v2 serving the same echo tool, written the way its docs show:
 * - `stateless`: `createMcpHandler` (a server built per request) behind `toNodeHandler`, which
 *   serves 2026-07-28 requests (and 2025 ones through its stateless fallback);
 * - `session`: one `McpServer` + `NodeStreamableHTTPServerTransport` per 2025 session, JSON
 *   responses.
 * Usage: `node sdk.js stateless|session`; prints `listening <port>` once bound to 127.0.0.1.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer, createMcpHandler } from '@modelcontextprotocol/server';
import { NodeStreamableHTTPServerTransport, toNodeHandler } from '@modelcontextprotocol/node';
import { z } from 'zod';

function echoServer(): McpServer {
  const server = new McpServer({ name: 'sdk-echo', version: '1.0.0' });
  server.registerTool(
    'echo',
    { description: 'Echo the text back', inputSchema: z.object({ text: z.string() }) },
    ({ text }) => ({ content: [{ type: 'text', text }] }),
  );
  return server;
}

function statelessHandler(): (req: IncomingMessage, res: ServerResponse) => void {
  const node = toNodeHandler(createMcpHandler(() => echoServer()));
  return (req, res) => void node(req, res);
}

function sessionHandler(): (req: IncomingMessage, res: ServerResponse) => void {
  const transports = new Map<string, NodeStreamableHTTPServerTransport>();
  return (req, res) => {
    const sid = req.headers['mcp-session-id'];
    const existing = typeof sid === 'string' ? transports.get(sid) : undefined;
    if (existing !== undefined) {
      void existing.handleRequest(req, res);
      return;
    }
    if (sid !== undefined) {
      res.writeHead(404, { 'Content-Type': 'application/json' });
      res.end('{"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"Session not found"}}');
      return;
    }
    // No session id: only an initialize may open one; the transport checks that itself.
    const transport = new NodeStreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      enableJsonResponse: true,
      onsessioninitialized: (id) => void transports.set(id, transport),
      onsessionclosed: (id) => void transports.delete(id),
    });
    void echoServer()
      .connect(transport)
      .then(() => transport.handleRequest(req, res));
  };
}

const mode = process.argv[2];
if (mode !== 'stateless' && mode !== 'session') {
  process.stderr.write('usage: sdk.js stateless|session\n');
  process.exit(2);
}
const server = createServer(mode === 'stateless' ? statelessHandler() : sessionHandler());
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`listening ${(server.address() as AddressInfo).port}\n`);
});
process.on('SIGTERM', () => {
  server.closeAllConnections();
  server.close(() => process.exit(0));
});
