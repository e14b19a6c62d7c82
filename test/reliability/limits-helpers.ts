/**
 * Raw HTTP for the session-side limit tests: 2025 sessions opened and used with a bearer token,
 * 2026-07-28 requests, and the JSON-RPC error (if any) of an answer, so each test can read the
 * exact status and error a hostile or honest client gets.
 */
export const MODERN_META = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientCapabilities': {},
};

export interface RpcError {
  code: number;
  message: string;
}

export interface Answer {
  status: number;
  sid: string | undefined;
  text: string;
  /** The parsed body (JSON or the first SSE data line), undefined when neither. */
  body: { id?: unknown; result?: unknown; error?: RpcError } | undefined;
}

function bodyOf(text: string): Answer['body'] {
  const data = /^data: (.*)$/m.exec(text);
  try {
    return JSON.parse(data ? data[1]! : text) as Answer['body'];
  } catch {
    return undefined;
  }
}

export async function post(
  url: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<Answer> {
  const res = await fetch(url, {
    method: 'POST',
    headers: {
      'Content-Type': 'application/json',
      Accept: 'application/json, text/event-stream',
      ...headers,
    },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  return {
    status: res.status,
    sid: res.headers.get('mcp-session-id') ?? undefined,
    text,
    body: bodyOf(text),
  };
}

export const auth = (token: string | undefined): Record<string, string> =>
  token === undefined ? {} : { Authorization: `Bearer ${token}` };

/** `initialize` of a 2025 session (2025-11-25 unless told; batches need 2025-03-26). */
export function initialize(
  url: string,
  token?: string,
  protocolVersion = '2025-11-25',
): Promise<Answer> {
  return post(
    url,
    {
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: {
        protocolVersion,
        capabilities: {},
        clientInfo: { name: 'limits-test', version: '1' },
      },
    },
    auth(token),
  );
}

/** A session's request (or batch) with its headers. */
export function inSession(
  url: string,
  sid: string,
  token: string | undefined,
  body: unknown,
  version = '2025-11-25',
): Promise<Answer> {
  return post(url, body, {
    ...auth(token),
    'Mcp-Session-Id': sid,
    'MCP-Protocol-Version': version,
  });
}

export const ping = (url: string, sid: string, token?: string, id: unknown = 1) =>
  inSession(url, sid, token, { jsonrpc: '2.0', id, method: 'ping' });

/** A 2026-07-28 request (no session). */
export function modern(
  url: string,
  token: string | undefined,
  method: string,
  params: Record<string, unknown>,
  id: unknown = 1,
): Promise<Answer> {
  return post(
    url,
    { jsonrpc: '2.0', id, method, params: { ...params, _meta: MODERN_META } },
    {
      ...auth(token),
      'MCP-Protocol-Version': '2026-07-28',
      'Mcp-Method': method,
      ...(typeof params.name === 'string' ? { 'Mcp-Name': params.name } : {}),
    },
  );
}

/** Runs `n` jobs, `width` at a time. */
export async function pool<T>(n: number, width: number, job: (i: number) => Promise<T>) {
  const out: T[] = new Array<T>(n);
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < n) {
        const i = next++;
        out[i] = await job(i);
      }
    }),
  );
  return out;
}

/** A 2026-07-28 `subscriptions/listen` request: streaming (aborted by `ctl`), or its error. */
export async function listen(
  url: string,
  token: string | undefined,
  params: Record<string, unknown> = {},
): Promise<{ streaming: boolean; ctl: AbortController; error: RpcError | undefined }> {
  const ctl = new AbortController();
  const res = await fetch(url, {
    method: 'POST',
    signal: ctl.signal,
    headers: {
      ...auth(token),
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': 'subscriptions/listen',
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 'l',
      method: 'subscriptions/listen',
      params: { _meta: MODERN_META, notifications: { toolsListChanged: true }, ...params },
    }),
  });
  if (res.headers.get('content-type') === 'text/event-stream') {
    await res.body!.getReader().read(); // the acknowledgement
    return { streaming: true, ctl, error: undefined };
  }
  const body = (await res.json()) as Answer['body'];
  return { streaming: false, ctl, error: body?.error };
}

/** DELETE of a 2025 session: its status. */
export async function endSession(url: string, sid: string, token?: string): Promise<number> {
  const res = await fetch(url, {
    method: 'DELETE',
    headers: { ...auth(token), 'Mcp-Session-Id': sid, 'MCP-Protocol-Version': '2025-11-25' },
  });
  await res.arrayBuffer();
  return res.status;
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
