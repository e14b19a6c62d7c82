/**
 * `moonhub connect URL`: a stdio <-> Streamable HTTP bridge, so a client that only speaks stdio
 * joins the running hub (its agents, inboxes and sessions) instead of starting a second hub.
 * Each stdin line is POSTed as it is; JSON and event-stream answers come back as stdout lines;
 * after a 2025 `initialize` a GET stream carries the hub's own notifications (list_changed,
 * server requests). The token comes from `--token` or, better (not shown by `ps`), from
 * `MOONHUB_TOKEN`. A refused credential answers every request with the hub's own words and is
 * said once on stderr.
 */
import type { Command } from 'commander';
import { createInterface } from 'node:readline';
import type { Readable, Writable } from 'node:stream';
import { MCP_NAME_SOURCE, PROTOCOL_VERSION_META_KEY } from '../server/protocol.js';
import { INTERNAL_ERROR, INVALID_REQUEST, PARSE_ERROR } from '../errors.js';

/** Longest stdin line accepted (the hub's own request body limit). */
export const MAX_LINE_BYTES = 4 * 1024 * 1024;
/** How often the answer of a request whose stream ended early is asked for again. */
const MAX_RESUMES = 20;

export interface BridgeOptions {
  url: string;
  token?: string;
  input: Readable;
  output: Writable;
  /** Where the bridge says what went wrong (stderr). */
  warn: (line: string) => void;
}

type Message = {
  id?: string | number | null;
  method?: string;
  params?: Record<string, unknown>;
  result?: Record<string, unknown>;
};

function headerValue(s: string): string {
  return /^[\x20-\x7e]*$/.test(s) && s === s.trim() && s !== ''
    ? s
    : `=?base64?${Buffer.from(s, 'utf8').toString('base64')}?=`;
}

/** Reads an event stream, handing each event's data and id on; returns the last event id. */
async function readEvents(
  body: AsyncIterable<Uint8Array>,
  onEvent: (data: string) => void,
): Promise<string | undefined> {
  const decoder = new TextDecoder();
  let buffer = '';
  let lastId: string | undefined;
  let data: string[] = [];
  const line = (l: string): void => {
    if (l === '') {
      if (data.length > 0 && data.join('') !== '') onEvent(data.join('\n'));
      data = [];
    } else if (l.startsWith('data:')) data.push(l.slice(5).replace(/^ /, ''));
    else if (l.startsWith('id:')) lastId = l.slice(3).trim();
  };
  for await (const chunk of body) {
    buffer += decoder.decode(chunk, { stream: true });
    let nl: number;
    while ((nl = buffer.indexOf('\n')) >= 0) {
      line(buffer.slice(0, nl).replace(/\r$/, ''));
      buffer = buffer.slice(nl + 1);
    }
  }
  if (buffer !== '') line(buffer);
  line('');
  return lastId;
}

export class StdioBridge {
  private sessionId: string | undefined;
  private protocolVersion: string | undefined;
  private listening = false;
  private closed = false;
  private refusedSaid = false;
  private readonly streams = new Set<AbortController>();

  constructor(private readonly opts: BridgeOptions) {}

  private write(msg: unknown): void {
    if (!this.closed) this.opts.output.write(`${JSON.stringify(msg)}\n`);
  }

  private headers(msg: Message): Record<string, string> {
    const h: Record<string, string> = {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
    };
    if (this.opts.token) h.authorization = `Bearer ${this.opts.token}`;
    const meta = msg.params?._meta as Record<string, unknown> | undefined;
    const claimed = meta?.[PROTOCOL_VERSION_META_KEY];
    if (typeof claimed === 'string' && msg.method !== undefined) {
      // 2026-07-28: each request names its revision, method and subject in headers too.
      h['mcp-protocol-version'] = claimed;
      h['mcp-method'] = msg.method;
      const field = Object.hasOwn(MCP_NAME_SOURCE, msg.method)
        ? MCP_NAME_SOURCE[msg.method]
        : undefined;
      const value = field === undefined ? undefined : msg.params?.[field];
      if (typeof value === 'string') h['mcp-name'] = headerValue(value);
    } else {
      if (this.sessionId !== undefined) h['mcp-session-id'] = this.sessionId;
      if (this.protocolVersion !== undefined) h['mcp-protocol-version'] = this.protocolVersion;
    }
    return h;
  }

  /** Answers a request the hub could not take with a JSON-RPC error carrying the hub's words. */
  private fail(msg: Message, status: number, text: string): void {
    let message = `HTTP ${status} from ${this.opts.url}`;
    let code = INTERNAL_ERROR;
    try {
      const body = JSON.parse(text) as { error?: { code?: number; message?: string } };
      if (typeof body.error?.message === 'string') message = body.error.message;
      if (typeof body.error?.code === 'number') code = body.error.code;
    } catch {
      if (text.trim() !== '') message += `: ${text.trim().slice(0, 500)}`;
    }
    if (status === 401 || status === 403) {
      if (!this.refusedSaid)
        this.opts.warn(`moonhub connect: the hub refused the token: ${message}`);
      this.refusedSaid = true;
    } else this.opts.warn(`moonhub connect: ${message}`);
    if (msg.id !== undefined && msg.method !== undefined)
      this.write({ jsonrpc: '2.0', id: msg.id, error: { code, message } });
  }

  /** Sends one client message and relays what comes back. */
  async send(line: string): Promise<void> {
    let msg: Message;
    try {
      msg = JSON.parse(line) as Message;
    } catch {
      this.write({
        jsonrpc: '2.0',
        id: null,
        error: { code: PARSE_ERROR, message: 'Parse error' },
      });
      return;
    }
    let res: Response;
    try {
      res = await fetch(this.opts.url, {
        method: 'POST',
        headers: this.headers(msg),
        body: line,
      });
    } catch (err) {
      this.fail(msg, 0, `the hub cannot be reached: ${(err as Error).message}`);
      return;
    }
    if (!res.ok) {
      this.fail(msg, res.status, await res.text());
      return;
    }
    if (msg.method === 'initialize')
      this.sessionId = res.headers.get('mcp-session-id') ?? undefined;
    const type = res.headers.get('content-type') ?? '';
    let answered = false;
    const relay = (data: string): void => {
      let out: Message;
      try {
        out = JSON.parse(data) as Message;
      } catch {
        return;
      }
      if (msg.id !== undefined && out.id === msg.id && out.method === undefined) answered = true;
      if (msg.method === 'initialize' && typeof out.result?.protocolVersion === 'string')
        this.protocolVersion = out.result.protocolVersion;
      this.write(out);
    };
    if (type.includes('text/event-stream') && res.body !== null) {
      let lastId = await readEvents(res.body, relay);
      // 2025-11-25 SSE polling: a stream that ended before the answer is resumed by id.
      for (let i = 0; !answered && lastId !== undefined && i < MAX_RESUMES && !this.closed; i++) {
        const again = await fetch(this.opts.url, {
          headers: { ...this.headers({}), accept: 'text/event-stream', 'last-event-id': lastId },
        }).catch(() => undefined);
        if (again === undefined || !again.ok || again.body === null) break;
        lastId = (await readEvents(again.body, relay)) ?? lastId;
      }
    } else if (res.status !== 202) {
      const text = await res.text();
      if (text.trim() !== '') relay(text);
    }
    if (msg.method === 'initialize' && this.sessionId !== undefined) this.listen();
  }

  /** The hub's own messages of a 2025 session (list_changed, server requests) on a GET stream. */
  private listen(): void {
    if (this.listening) return;
    this.listening = true;
    void (async () => {
      let delay = 250;
      while (!this.closed) {
        const ctl = new AbortController();
        this.streams.add(ctl);
        try {
          const res = await fetch(this.opts.url, {
            headers: { ...this.headers({}), accept: 'text/event-stream' },
            signal: ctl.signal,
          });
          // No stream offered (405) or the session is gone: nothing more to listen to.
          if (!res.ok || res.body === null) return;
          delay = 250;
          await readEvents(res.body, (data) => {
            try {
              this.write(JSON.parse(data));
            } catch {
              // Not JSON: nothing a stdio client could use.
            }
          });
        } catch {
          if (this.closed) return;
        } finally {
          this.streams.delete(ctl);
        }
        await new Promise((r) => setTimeout(r, delay));
        delay = Math.min(delay * 2, 10_000);
      }
    })();
  }

  /** Ends the bridge: open streams close and a 2025 session is ended on the hub. */
  async close(): Promise<void> {
    this.closed = true;
    for (const ctl of this.streams) ctl.abort();
    if (this.sessionId === undefined) return;
    await fetch(this.opts.url, { method: 'DELETE', headers: this.headers({}) }).catch(() => {});
  }

  /** Runs until stdin ends; requests run side by side, as over any stdio server. */
  async run(): Promise<void> {
    const rl = createInterface({ input: this.opts.input, crlfDelay: Infinity });
    const pending = new Set<Promise<void>>();
    for await (const line of rl) {
      if (line.trim() === '') continue;
      if (Buffer.byteLength(line) > MAX_LINE_BYTES) {
        this.write({
          jsonrpc: '2.0',
          id: null,
          error: { code: INVALID_REQUEST, message: `message larger than ${MAX_LINE_BYTES} bytes` },
        });
        continue;
      }
      const p = this.send(line).catch((err: unknown) =>
        this.opts.warn(`moonhub connect: ${(err as Error).message}`),
      );
      pending.add(p);
      void p.finally(() => pending.delete(p));
      // The handshake comes first: later messages need its session id.
      if (/"method"\s*:\s*"initialize"/.test(line)) await p;
    }
    await Promise.all(pending);
    await this.close();
  }
}

export function addConnectCommand(program: Command): void {
  program
    .command('connect')
    .description(
      'bridge stdio to a running hub over HTTP (for stdio-only MCP clients); token from MOONHUB_TOKEN or --token',
    )
    .argument('<url>', "the hub's MCP endpoint, e.g. http://127.0.0.1:8848/mcp")
    .option('--token <token>', 'session token (prefer the MOONHUB_TOKEN environment variable)')
    .action(async (url: string, flags: { token?: string }) => {
      if (!/^https?:\/\//.test(url))
        throw new Error(`connect needs an http(s):// URL, got '${url}'`);
      const bridge = new StdioBridge({
        url,
        token: flags.token ?? process.env.MOONHUB_TOKEN,
        input: process.stdin,
        output: process.stdout,
        warn: (line) => process.stderr.write(`${line}\n`),
      });
      await bridge.run();
    });
}
