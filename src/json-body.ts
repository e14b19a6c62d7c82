/**
 * Reads a small JSON request body of the operator's HTTP APIs (sessions admin, dashboard): at
 * most `max` bytes are kept (the rest is read and dropped, so the connection stays usable), then
 * parsed. `fail` gets the HTTP status and why.
 */
import type { IncomingMessage } from 'node:http';

export function readJsonBody(
  req: IncomingMessage,
  max: number,
  done: (body: unknown) => void,
  fail: (status: 400 | 413, why: string) => void,
): void {
  const chunks: Buffer[] = [];
  let size = 0;
  req.on('data', (c: Buffer) => {
    size += c.length;
    if (size <= max) chunks.push(c);
  });
  req.on('end', () => {
    if (size > max) return fail(413, `the body exceeds ${max} bytes`);
    let body: unknown;
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    } catch {
      return fail(400, 'the body is not valid JSON');
    }
    done(body);
  });
}
