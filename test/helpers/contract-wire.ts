/**
 * The transports of the contract suite, each behind one small interface (`Wire`): raw JSON-RPC
 * over HTTP in the 2026-07-28 era (envelope and headers) and in a 2025 session, and over stdio in
 * both eras, all against the JS hub fixture in a child process. No SDK client: the suite sees the
 * bytes every transport really sends.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { FIXTURE, startHubProcess, type HubProcess } from './hub-process.js';
import { waitFor } from './mcp-client.js';

export type Message = {
  jsonrpc?: string;
  id?: string | number | null;
  method?: string;
  params?: Record<string, unknown>;
  result?: Record<string, unknown>;
  error?: { code: number; message: string; data?: unknown };
};

export interface Exchange {
  /** HTTP status; undefined on stdio. */
  status: number | undefined;
  /** The answer (the message with the request's id, or the first error without one). */
  answer: Message | undefined;
  /** Everything else that came back with it (progress, server requests...). */
  notes: Message[];
  /** Every message that came back, in order (a batch answer is its members). */
  all: Message[];
}

export interface Wire {
  readonly name: string;
  readonly era: 'legacy' | 'modern';
  readonly transport: 'http' | 'stdio';
  /** Sends one request (enveloped in the 2026 era) and waits for its answer. */
  request(
    method: string,
    params?: Record<string, unknown>,
    id?: string | number,
  ): Promise<Exchange>;
  /** Sends one notification (enveloped in the 2026 era). */
  notify(method: string, params?: Record<string, unknown>): Promise<void>;
  /** Sends raw text (HTTP: with the era's headers); `expect` answers are awaited on stdio. */
  raw(text: string, expect?: number): Promise<Exchange>;
  /** Opens the era's list_changed channel; returns the methods heard so far, live. */
  watch(): Promise<{ heard: string[]; close(): void }>;
  /** Starts a request and returns a way to cancel it the era's way, and its pending answer. */
  cancellable(
    method: string,
    params: Record<string, unknown>,
    id: string,
  ): { cancel(): Promise<void>; answer: Promise<Exchange | undefined> };
  /** How often the fixture logged a cancelled `slow` call. */
  aborted(): number;
  close(): Promise<void>;
}

export const ENVELOPE = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientCapabilities': {},
};

function enveloped(params: Record<string, unknown> = {}): Record<string, unknown> {
  const meta = (params._meta ?? {}) as Record<string, unknown>;
  return { ...params, _meta: { ...meta, ...ENVELOPE } };
}

function exchange(status: number | undefined, all: Message[], id?: unknown): Exchange {
  const answer =
    id === undefined
      ? all[0]
      : (all.find((m) => m.id === id && (m.result !== undefined || m.error !== undefined)) ??
        all.find((m) => m.error !== undefined && m.id === null));
  return { status, answer, notes: all.filter((m) => m !== answer), all };
}

/** The messages of a JSON or SSE body. */
function parseBody(text: string, contentType: string | null): Message[] {
  if (text === '') return [];
  if ((contentType ?? '').includes('text/event-stream')) {
    const out: Message[] = [];
    for (const line of text.split('\n'))
      if (line.startsWith('data: ') && line.length > 6) out.push(JSON.parse(line.slice(6)));
    return out;
  }
  const parsed = JSON.parse(text) as Message | Message[];
  return Array.isArray(parsed) ? parsed : [parsed];
}

// ---- HTTP -----------------------------------------------------------------------------------

class HttpWire implements Wire {
  readonly transport = 'http' as const;
  private sessionId: string | undefined;
  private nextId = 1;

  constructor(
    private readonly hub: HubProcess,
    readonly era: 'legacy' | 'modern',
    private readonly version: string,
  ) {}

  get name(): string {
    return `HTTP ${this.era === 'modern' ? '2026-07-28' : this.version}`;
  }

  async open(): Promise<void> {
    if (this.era === 'modern') return;
    const res = await fetch(this.hub.url, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'application/json' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 0,
        method: 'initialize',
        params: {
          protocolVersion: this.version,
          capabilities: {},
          clientInfo: { name: 'contract', version: '1' },
        },
      }),
    });
    await res.text();
    this.sessionId = res.headers.get('mcp-session-id') ?? undefined;
    await this.notify('notifications/initialized');
  }

  private headers(msg?: { method?: string; params?: Record<string, unknown> }) {
    const h: Record<string, string> = {
      'Content-Type': 'application/json',
      Accept: 'application/json, text/event-stream',
    };
    if (this.era === 'legacy') {
      if (this.sessionId !== undefined) h['Mcp-Session-Id'] = this.sessionId;
      h['MCP-Protocol-Version'] = this.version;
      return h;
    }
    h['MCP-Protocol-Version'] = '2026-07-28';
    if (msg?.method !== undefined) h['Mcp-Method'] = msg.method;
    const name = msg?.params?.name ?? msg?.params?.uri;
    if (typeof name === 'string') h['Mcp-Name'] = name;
    return h;
  }

  private async post(body: string, headers: Record<string, string>, signal?: AbortSignal) {
    const res = await fetch(this.hub.url, { method: 'POST', headers, body, signal });
    const text = await res.text();
    return { status: res.status, all: parseBody(text, res.headers.get('content-type')) };
  }

  private message(method: string, params: Record<string, unknown> | undefined, id?: unknown) {
    const p = this.era === 'modern' ? enveloped(params) : params;
    return { jsonrpc: '2.0', ...(id === undefined ? {} : { id }), method, params: p ?? {} };
  }

  async request(method: string, params?: Record<string, unknown>, id?: string | number) {
    const rid = id ?? this.nextId++;
    const msg = this.message(method, params, rid);
    const { status, all } = await this.post(JSON.stringify(msg), this.headers(msg));
    return exchange(status, all, rid);
  }

  async notify(method: string, params?: Record<string, unknown>) {
    const msg = this.message(method, params);
    await this.post(JSON.stringify(msg), this.headers(msg));
  }

  async raw(text: string) {
    const { status, all } = await this.post(text, this.headers());
    return exchange(status, all, undefined);
  }

  async watch() {
    const heard: string[] = [];
    const ctl = new AbortController();
    const res =
      this.era === 'legacy'
        ? await fetch(this.hub.url, {
            headers: { ...this.headers(), Accept: 'text/event-stream' },
            signal: ctl.signal,
          })
        : await fetch(this.hub.url, {
            method: 'POST',
            headers: this.headers({ method: 'subscriptions/listen' }),
            body: JSON.stringify(
              this.message(
                'subscriptions/listen',
                { notifications: { toolsListChanged: true, promptsListChanged: true } },
                'listen-1',
              ),
            ),
            signal: ctl.signal,
          });
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    let buf = '';
    void (async () => {
      try {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) return;
          buf += decoder.decode(value, { stream: true });
          let nl;
          while ((nl = buf.indexOf('\n')) !== -1) {
            const line = buf.slice(0, nl);
            buf = buf.slice(nl + 1);
            if (line.startsWith('data: ') && line.length > 6) {
              const m = JSON.parse(line.slice(6)) as Message;
              if (m.method !== undefined) heard.push(m.method);
            }
          }
        }
      } catch {
        // Closed by close().
      }
    })();
    return { heard, close: () => ctl.abort() };
  }

  cancellable(method: string, params: Record<string, unknown>, id: string) {
    const ctl = new AbortController();
    const msg = this.message(method, params, id);
    const answer = this.post(JSON.stringify(msg), this.headers(msg), ctl.signal).then(
      ({ status, all }) => exchange(status, all, id),
      () => undefined,
    );
    return {
      answer,
      // 2026-07-28 over HTTP: closing the request's connection is the cancellation.
      cancel: async () =>
        this.era === 'modern'
          ? ctl.abort()
          : this.notify('notifications/cancelled', { requestId: id, reason: 'test' }),
    };
  }

  aborted(): number {
    return this.hub.stderr().split('slow: aborted').length - 1;
  }

  async close(): Promise<void> {
    if (this.sessionId !== undefined)
      await fetch(this.hub.url, { method: 'DELETE', headers: this.headers() }).catch(() => {});
  }
}

// ---- stdio ----------------------------------------------------------------------------------

class StdioWire implements Wire {
  readonly transport = 'stdio' as const;
  private readonly child: ChildProcessWithoutNullStreams;
  private readonly lines: Message[] = [];
  private stderr = '';
  private buf = '';
  private nextId = 1;

  constructor(
    readonly era: 'legacy' | 'modern',
    private readonly version: string,
  ) {
    this.child = spawn(process.execPath, [FIXTURE, 'stdio', '5'], { stdio: 'pipe' });
    this.child.stderr.on('data', (d: Buffer) => (this.stderr += d.toString()));
    this.child.stdout.on('data', (d: Buffer) => {
      this.buf += d.toString();
      let nl;
      while ((nl = this.buf.indexOf('\n')) !== -1) {
        this.lines.push(JSON.parse(this.buf.slice(0, nl)) as Message);
        this.buf = this.buf.slice(nl + 1);
      }
    });
  }

  get name(): string {
    return `stdio ${this.era === 'modern' ? '2026-07-28' : this.version}`;
  }

  async open(): Promise<void> {
    if (this.era === 'modern') return;
    const r = await this.request('initialize', {
      protocolVersion: this.version,
      capabilities: {},
      clientInfo: { name: 'contract', version: '1' },
    });
    if (r.answer?.result === undefined) throw new Error(`initialize failed: ${JSON.stringify(r)}`);
    await this.notify('notifications/initialized');
  }

  private message(method: string, params: Record<string, unknown> | undefined, id?: unknown) {
    const p = this.era === 'modern' ? enveloped(params) : params;
    return { jsonrpc: '2.0', ...(id === undefined ? {} : { id }), method, params: p ?? {} };
  }

  private send(text: string): void {
    this.child.stdin.write(text + '\n');
  }

  /** Waits for `count` lines after `from`, or for the answer to `id`; returns them. */
  private async collect(from: number, id: unknown, count = 1): Promise<Message[]> {
    const done = () => {
      const got = this.lines.slice(from);
      return id === undefined
        ? got.length >= count
        : got.some((m) => m.id === id && (m.result !== undefined || m.error !== undefined));
    };
    await waitFor(done, 10_000, `stdio answer ${String(id ?? count)}`);
    return this.lines.slice(from);
  }

  async request(method: string, params?: Record<string, unknown>, id?: string | number) {
    const rid = id ?? this.nextId++;
    const from = this.lines.length;
    this.send(JSON.stringify(this.message(method, params, rid)));
    return exchange(undefined, await this.collect(from, rid), rid);
  }

  async notify(method: string, params?: Record<string, unknown>) {
    this.send(JSON.stringify(this.message(method, params)));
  }

  async raw(text: string, expect = 1) {
    const from = this.lines.length;
    this.send(text);
    const all = await this.collect(from, undefined, expect);
    // A batch answer is one line holding an array.
    const flat = all.flatMap((m) => (Array.isArray(m) ? (m as Message[]) : [m]));
    return exchange(undefined, flat, undefined);
  }

  async watch() {
    const from = this.lines.length;
    let open = true;
    if (this.era === 'modern') {
      this.send(
        JSON.stringify(
          this.message(
            'subscriptions/listen',
            { notifications: { toolsListChanged: true, promptsListChanged: true } },
            'listen-1',
          ),
        ),
      );
    }
    const heard: string[] = [];
    const timer = setInterval(() => {
      if (!open) return;
      heard.length = 0;
      for (const m of this.lines.slice(from)) if (m.method !== undefined) heard.push(m.method);
    }, 5);
    return {
      heard,
      close: () => {
        open = false;
        clearInterval(timer);
        if (this.era === 'modern')
          void this.notify('notifications/cancelled', { requestId: 'listen-1' });
      },
    };
  }

  cancellable(method: string, params: Record<string, unknown>, id: string) {
    const from = this.lines.length;
    this.send(JSON.stringify(this.message(method, params, id)));
    return {
      answer: this.collect(from, id).then((all) => exchange(undefined, all, id)),
      cancel: () => this.notify('notifications/cancelled', { requestId: id, reason: 'test' }),
    };
  }

  aborted(): number {
    return this.stderr.split('slow: aborted').length - 1;
  }

  async close(): Promise<void> {
    const exited = new Promise((r) => this.child.once('exit', r));
    this.child.stdin.end();
    this.child.kill();
    await exited;
  }
}

/** The hub process the HTTP wires share (the stdio wires each start their own child). */
export async function startContractHub(): Promise<HubProcess> {
  return startHubProcess(['5']);
}

export type WireKind = 'http-modern' | 'http-legacy' | 'stdio-modern' | 'stdio-legacy';
export const WIRE_KINDS: WireKind[] = [
  'http-modern',
  'http-legacy',
  'stdio-modern',
  'stdio-legacy',
];

/** Opens a wire of `kind`; 2025 wires initialize at `version` (default 2025-11-25). */
export async function openWire(
  kind: WireKind,
  hub: HubProcess,
  version = '2025-11-25',
): Promise<Wire> {
  const era = kind.endsWith('modern') ? 'modern' : 'legacy';
  const wire = kind.startsWith('http')
    ? new HttpWire(hub, era, version)
    : new StdioWire(era, version);
  await wire.open();
  return wire;
}
