/**
 * The soak's raw MCP over HTTP: requests of both eras with the headers each needs, and what came
 * back reduced to one outcome label ("HTTP 200", "HTTP 413 -32000", "ECONNRESET", "timeout"), the
 * unit the soak counts per class.
 */

export const MODERN = '2026-07-28';
export const LEGACY = '2025-11-25';

export const ENVELOPE = {
  'io.modelcontextprotocol/protocolVersion': MODERN,
  'io.modelcontextprotocol/clientCapabilities': {},
};

export interface Target {
  url: string;
  token: string;
}

let nextId = 1;
export function newId(): number {
  return nextId++;
}

/** The body and headers of a 2026-07-28 request. */
export function modernRequest(
  t: Target,
  method: string,
  params: Record<string, unknown> = {},
  id: number | string = newId(),
): { body: string; headers: Record<string, string> } {
  const headers: Record<string, string> = {
    'Content-Type': 'application/json',
    Accept: 'application/json, text/event-stream',
    'MCP-Protocol-Version': MODERN,
    'Mcp-Method': method,
    Authorization: `Bearer ${t.token}`,
  };
  const name = params.name ?? params.uri;
  if (typeof name === 'string') headers['Mcp-Name'] = name;
  const meta = { ...((params._meta as object | undefined) ?? {}), ...ENVELOPE };
  return {
    body: JSON.stringify({ jsonrpc: '2.0', id, method, params: { ...params, _meta: meta } }),
    headers,
  };
}

/** The headers of a request in a 2025 session. */
export function legacyHeaders(t: Target, session?: string): Record<string, string> {
  const h: Record<string, string> = {
    'Content-Type': 'application/json',
    Accept: 'application/json, text/event-stream',
    'MCP-Protocol-Version': LEGACY,
    Authorization: `Bearer ${t.token}`,
  };
  if (session !== undefined) h['Mcp-Session-Id'] = session;
  return h;
}

export interface Answer {
  status: number;
  /** The JSON-RPC messages of the body (JSON or SSE). */
  messages: { id?: unknown; result?: unknown; error?: { code: number; message: string } }[];
  headers: Headers;
}

/** The messages of a JSON or SSE body. */
export function parseBody(text: string, contentType: string | null): Answer['messages'] {
  if (text === '') return [];
  try {
    if ((contentType ?? '').includes('text/event-stream')) {
      return text
        .split('\n')
        .filter((l) => l.startsWith('data: ') && l.length > 6)
        .map((l) => JSON.parse(l.slice(6)) as Answer['messages'][number]);
    }
    const v = JSON.parse(text) as Answer['messages'][number] | Answer['messages'];
    return Array.isArray(v) ? v : [v];
  } catch {
    return [];
  }
}

export async function post(
  url: string,
  body: string | Buffer,
  headers: Record<string, string>,
  timeoutMs: number,
): Promise<Answer> {
  const res = await fetch(url, {
    method: 'POST',
    headers,
    body,
    signal: AbortSignal.timeout(timeoutMs),
  });
  const text = await res.text();
  return {
    status: res.status,
    messages: parseBody(text, res.headers.get('content-type')),
    headers: res.headers,
  };
}

/** "HTTP 200", "HTTP 200 -32602", "HTTP 413 -32000": the status and the first error code. */
export function labelOf(a: Answer): string {
  const err = a.messages.find((m) => m.error !== undefined)?.error;
  return err === undefined ? `HTTP ${a.status}` : `HTTP ${a.status} ${err.code}`;
}

/** A failed request's label: its timeout or socket error code. */
export function failureLabel(err: unknown): string {
  const e = err as { name?: string; code?: string; cause?: { code?: string; name?: string } };
  if (e.name === 'TimeoutError' || e.cause?.name === 'TimeoutError') return 'timeout';
  return e.cause?.code ?? e.code ?? e.name ?? 'error';
}

/** Counts of outcome labels. */
export class Tally {
  readonly counts = new Map<string, number>();
  add(label: string, n = 1): void {
    this.counts.set(label, (this.counts.get(label) ?? 0) + n);
  }
  get total(): number {
    let n = 0;
    for (const v of this.counts.values()) n += v;
    return n;
  }
  toJSON(): Record<string, number> {
    return Object.fromEntries([...this.counts].sort((a, b) => b[1] - a[1]));
  }
}
