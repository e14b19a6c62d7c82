/**
 * The ceiling: a bare node:http server that reads a JSON-RPC `tools/call`, parses it and answers
 * the echo result. Nothing MCP-specific beyond that, so every other row is measured against it.
 * Prints `listening <port>` on stdout once bound to 127.0.0.1.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    let out: string;
    try {
      const msg = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      if (msg.method !== 'tools/call') throw new Error(`unexpected method ${msg.method}`);
      const text = String(msg.params?.arguments?.text ?? '');
      out = JSON.stringify({
        jsonrpc: '2.0',
        id: msg.id,
        result: { content: [{ type: 'text', text }] },
      });
    } catch (err) {
      out = JSON.stringify({
        jsonrpc: '2.0',
        id: null,
        error: { code: -32600, message: (err as Error).message },
      });
    }
    res.writeHead(200, {
      'Content-Type': 'application/json',
      'Content-Length': Buffer.byteLength(out),
    });
    res.end(out);
  });
});

server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`listening ${(server.address() as AddressInfo).port}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
