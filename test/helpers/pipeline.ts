/**
 * HTTP/1.1 requests pipelined on one kept-alive connection, answers read as they come: the
 * cluster race tests queue a request behind a plugin call that keeps an instance's thread busy,
 * so the instance wakes with that request and a Redis announcement ready together.
 */
import { connect, type Socket } from 'node:net';

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export class Pipeline {
  private readonly socket: Socket;
  private text = '';
  constructor(url: string) {
    const u = new URL(url);
    this.socket = connect(Number(u.port), u.hostname);
    this.socket.setEncoding('utf8');
    this.socket.on('data', (d: string) => (this.text += d));
  }
  /** A POST of `body` as JSON; without a body, a GET. */
  send(path: string, headers: Record<string, string>, body?: unknown): void {
    const json = body === undefined ? '' : JSON.stringify(body);
    const method = body === undefined ? 'GET' : 'POST';
    const lines = [`${method} ${path} HTTP/1.1`, 'Host: 127.0.0.1', 'Connection: keep-alive'];
    for (const [k, v] of Object.entries({
      ...headers,
      'Content-Length': String(Buffer.byteLength(json)),
    }))
      lines.push(`${k}: ${v}`);
    this.socket.write(`${lines.join('\r\n')}\r\n\r\n${json}`);
  }
  /** Everything received once it matches `re` (bounded by `ms`). */
  async waitFor(re: RegExp, ms: number): Promise<string> {
    const end = Date.now() + ms;
    while (!re.test(this.text)) {
      if (Date.now() > end) throw new Error(`no ${re} within ${ms} ms:\n${this.text}`);
      await sleep(10);
    }
    return this.text;
  }
  close(): void {
    this.socket.destroy();
  }
}
