/**
 * The requests the bench sends, for both protocol eras, as the SDK v2 client sends them: the body
 * split around its JSON-RPC id (so a load generator can number requests) and the headers.
 */
import { request as httpRequest, Agent } from 'node:http';

export type Era = 'modern' | 'legacy';
export const MODERN_VERSION = '2026-07-28';
export const LEGACY_VERSION = '2025-11-25';

export interface RequestSpec {
  url: string;
  headers: Record<string, string>;
  /** The body is `prefix + id + suffix`. */
  prefix: string;
  suffix: string;
}

const ENVELOPE = {
  'io.modelcontextprotocol/protocolVersion': MODERN_VERSION,
  'io.modelcontextprotocol/clientCapabilities': {},
};

/** A request for `method` in `era`; `sessionId` for 2025 sessions (none: sessionless legacy). */
export function spec(
  url: string,
  era: Era,
  method: string,
  params: Record<string, unknown>,
  sessionId?: string,
): RequestSpec {
  const headers: Record<string, string> = {
    'Content-Type': 'application/json',
    Accept: 'application/json, text/event-stream',
  };
  let body: Record<string, unknown>;
  if (era === 'modern') {
    headers['MCP-Protocol-Version'] = MODERN_VERSION;
    headers['Mcp-Method'] = method;
    if (typeof params.name === 'string') headers['Mcp-Name'] = params.name;
    body = { ...params, _meta: ENVELOPE };
  } else {
    headers['MCP-Protocol-Version'] = LEGACY_VERSION;
    if (sessionId !== undefined) headers['Mcp-Session-Id'] = sessionId;
    body = params;
  }
  const json = JSON.stringify({ jsonrpc: '2.0', id: 0, method, params: body });
  const cut = json.indexOf('"id":0') + '"id":'.length;
  return { url, headers, prefix: json.slice(0, cut), suffix: json.slice(cut + 1) };
}

export function echoCall(url: string, era: Era, sessionId?: string, name = 'echo'): RequestSpec {
  return spec(url, era, 'tools/call', { name, arguments: { text: 'hello' } }, sessionId);
}

const agent = new Agent({ keepAlive: true, maxSockets: 32 });

export interface HttpAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** One POST over a keep-alive agent (lighter than fetch when opening thousands of sessions). */
export function post(
  url: string,
  headers: Record<string, string>,
  body: string,
): Promise<HttpAnswer> {
  return new Promise((res, rej) => {
    const req = httpRequest(url, { method: 'POST', headers, agent }, (r) => {
      const chunks: Buffer[] = [];
      r.on('data', (c: Buffer) => chunks.push(c));
      r.on('end', () =>
        res({
          status: r.statusCode ?? 0,
          headers: r.headers,
          body: Buffer.concat(chunks).toString('utf8'),
        }),
      );
      r.on('error', rej);
    });
    req.setTimeout(30_000, () => req.destroy(new Error(`POST ${url} timed out`)));
    req.on('error', rej);
    req.end(body);
  });
}

/** Sends one request of `s` with the given id. */
export function send(s: RequestSpec, id: number): Promise<HttpAnswer> {
  return post(s.url, s.headers, s.prefix + id + s.suffix);
}

/** The JSON-RPC result of an answer (JSON or a single SSE event), or throws with the answer. */
export function resultOf(a: HttpAnswer): Record<string, unknown> {
  let text = a.body;
  if (text.startsWith('event:') || text.startsWith('data:') || text.startsWith('id:')) {
    const line = text.split('\n').find((l) => l.startsWith('data:'));
    text = line === undefined ? '' : line.slice(5).trim();
  }
  let msg: { result?: Record<string, unknown>; error?: unknown };
  try {
    msg = JSON.parse(text);
  } catch {
    throw new Error(`HTTP ${a.status}, not JSON-RPC: ${a.body.slice(0, 300)}`);
  }
  if (a.status !== 200 || msg.result === undefined) {
    throw new Error(`HTTP ${a.status}: ${a.body.slice(0, 300)}`);
  }
  return msg.result;
}

/** Opens a 2025 session (initialize + notifications/initialized) and returns its id. */
export async function openSession(url: string): Promise<string> {
  const headers = {
    'Content-Type': 'application/json',
    Accept: 'application/json, text/event-stream',
  };
  const init = await post(
    url,
    headers,
    JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: {
        protocolVersion: LEGACY_VERSION,
        capabilities: {},
        clientInfo: { name: 'moonhub-bench', version: '1.0.0' },
      },
    }),
  );
  resultOf(init);
  const sid = init.headers['mcp-session-id'];
  if (typeof sid !== 'string') throw new Error(`no Mcp-Session-Id from ${url}`);
  const note = await post(
    url,
    { ...headers, 'Mcp-Session-Id': sid, 'MCP-Protocol-Version': LEGACY_VERSION },
    JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
  );
  if (note.status !== 202 && note.status !== 200) {
    throw new Error(`notifications/initialized: HTTP ${note.status} ${note.body}`);
  }
  return sid;
}

/** The text of a tools/call result's first content item. */
export function firstText(result: Record<string, unknown>): string | undefined {
  const content = result.content as { type?: string; text?: string }[] | undefined;
  return content?.[0]?.text;
}
