/**
 * A 2025 session spoken by hand over raw HTTP, each request on a connection of its own (so a
 * round-robin balancer or `--workers` picks a process for each), with the process that answered
 * (`X-Moonhub-Instance`) and the stream read as it arrives.
 */
import { request } from 'node:http';

export const LEGACY_VERSION = '2025-11-25';

export interface RawResponse {
  status: number;
  instance: string;
  sessionId: string | undefined;
  /** Everything received so far. */
  text(): string;
  /** Resolves once the body so far matches `re`; rejects after `ms` or when it ended without. */
  waitFor(re: RegExp, ms?: number): Promise<string>;
  /** The whole body, once the response ends. */
  done: Promise<string>;
  close(): void;
}

export interface RawRequest {
  method: 'GET' | 'POST' | 'DELETE';
  token?: string | undefined;
  sessionId?: string | undefined;
  body?: unknown;
  headers?: Record<string, string>;
}

export function rawRequest(url: string, r: RawRequest): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = {
      Accept: r.method === 'GET' ? 'text/event-stream' : 'application/json, text/event-stream',
      ...(r.token === undefined ? {} : { Authorization: `Bearer ${r.token}` }),
      ...(r.sessionId === undefined
        ? {}
        : { 'Mcp-Session-Id': r.sessionId, 'MCP-Protocol-Version': LEGACY_VERSION }),
      ...(r.body === undefined ? {} : { 'Content-Type': 'application/json' }),
      ...r.headers,
    };
    const req = request(url, { method: r.method, agent: false, headers }, (res) => {
      let text = '';
      let ended = false;
      const waiters = new Set<() => void>();
      res.setEncoding('utf8');
      res.on('data', (d: string) => {
        text += d;
        for (const w of waiters) w();
      });
      const done = new Promise<string>((ok) =>
        res.on('close', () => {
          ended = true;
          for (const w of waiters) w();
          ok(text);
        }),
      );
      const sid = res.headers['mcp-session-id'];
      resolve({
        status: res.statusCode ?? 0,
        instance: String(res.headers['x-moonhub-instance']),
        sessionId: typeof sid === 'string' ? sid : undefined,
        text: () => text,
        waitFor: (re, ms = 10_000) =>
          new Promise((ok, fail) => {
            const check = () => {
              const m = re.exec(text);
              if (m) {
                cleanup();
                ok(m[0]);
              } else if (ended) {
                cleanup();
                fail(new Error(`the response ended without ${re}:\n${text}`));
              }
            };
            const timer = setTimeout(() => {
              cleanup();
              fail(new Error(`no ${re} within ${ms} ms:\n${text}`));
            }, ms);
            const cleanup = () => {
              clearTimeout(timer);
              waiters.delete(check);
            };
            waiters.add(check);
            check();
          }),
        done,
        close: () => {
          req.destroy();
          res.destroy();
        },
      });
    });
    req.on('error', reject);
    req.end(r.body === undefined ? undefined : JSON.stringify(r.body));
  });
}

/** A POST of one JSON-RPC message in a session; resolves when the whole answer arrived. */
export async function sessionPost(
  url: string,
  token: string | undefined,
  sessionId: string,
  body: unknown,
): Promise<{ status: number; instance: string; text: string }> {
  const res = await rawRequest(url, { method: 'POST', token, sessionId, body });
  return { status: res.status, instance: res.instance, text: await res.done };
}

/** initialize + notifications/initialized; returns the session id and who answered. */
export async function initializeSession(
  url: string,
  token: string | undefined,
  capabilities: Record<string, unknown> = {},
): Promise<{ sessionId: string; instance: string }> {
  const res = await rawRequest(url, {
    method: 'POST',
    token,
    body: {
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: {
        protocolVersion: LEGACY_VERSION,
        capabilities,
        clientInfo: { name: 'raw-2025', version: '1.0.0' },
      },
    },
  });
  const text = await res.done;
  if (res.status !== 200 || res.sessionId === undefined)
    throw new Error(`initialize failed (${res.status}): ${text}`);
  const note = { jsonrpc: '2.0', method: 'notifications/initialized' };
  const ack = await sessionPost(url, token, res.sessionId, note);
  if (ack.status !== 202) throw new Error(`initialized refused (${ack.status}): ${ack.text}`);
  return { sessionId: res.sessionId, instance: res.instance };
}

let nextId = 1;

/** One request of the session; `id` counts up. */
export function call(method: string, params: Record<string, unknown> = {}) {
  return { jsonrpc: '2.0', id: nextId++, method, params };
}

/**
 * A 2026-07-28 `subscriptions/listen` stream for `tools/list_changed`, on a connection of its own
 * (so a balancer picks its process), returned once acknowledged.
 */
export async function openRawListen(url: string, token: string | undefined): Promise<RawResponse> {
  const listen = await rawRequest(url, {
    method: 'POST',
    token,
    headers: { 'MCP-Protocol-Version': '2026-07-28', 'Mcp-Method': 'subscriptions/listen' },
    body: {
      jsonrpc: '2.0',
      id: 'listen',
      method: 'subscriptions/listen',
      params: {
        notifications: { toolsListChanged: true },
        _meta: {
          'io.modelcontextprotocol/protocolVersion': '2026-07-28',
          'io.modelcontextprotocol/clientCapabilities': {},
        },
      },
    },
  });
  if (listen.status !== 200) throw new Error(`listen answered ${listen.status}: ${listen.text()}`);
  await listen.waitFor(/subscriptions\/acknowledged/);
  return listen;
}
