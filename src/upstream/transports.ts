/**
 * Building the SDK transport for an upstream address: Streamable HTTP, the legacy HTTP+SSE
 * transport (old servers), or a stdio subprocess from `stdio:<command line>`. A wrapper records
 * every message so callers (chilkat's `get_last_json_data`) can see the raw JSON-RPC envelopes.
 */
import { SSEClientTransport, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import type {
  FetchLike,
  JSONRPCMessage,
  OAuthClientProvider,
  Transport,
} from '@modelcontextprotocol/client';
import { StdioClientTransport, getDefaultEnvironment } from '@modelcontextprotocol/client/stdio';
import type { RequestGate } from './request-gate.js';

export type UpstreamKind = 'http' | 'sse' | 'stdio';

export interface TransportSettings {
  headers?: Record<string, string>;
  /** Child environment additions (stdio). */
  env?: Record<string, string>;
  cwd?: string;
  fetch?: FetchLike;
  authProvider?: OAuthClientProvider;
  /** Called with each message the upstream sends. */
  onIncoming?: (message: JSONRPCMessage) => void;
  /** Called with the child's pid once a stdio subprocess runs. */
  onSpawn?: (pid: number) => void;
  /** Bounds the requests the upstream sends (request-gate.ts); shared across reconnects. */
  gate?: RequestGate;
}

export function upstreamKind(url: string): UpstreamKind {
  if (url.startsWith('stdio:')) return 'stdio';
  const parsed = new URL(url);
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')
    throw new Error(`unsupported upstream address ${url}: use http(s)://... or stdio:<command>`);
  // The old HTTP+SSE transport lives on an endpoint conventionally named /sse.
  return /\/sse\/?$/.test(parsed.pathname) ? 'sse' : 'http';
}

/** Splits a command line the way a POSIX shell would for plain words and quotes (no expansion). */
export function splitCommandLine(line: string): string[] {
  const words: string[] = [];
  let cur = '';
  let inWord = false;
  let quote: '"' | "'" | undefined;
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (quote) {
      if (c === quote) quote = undefined;
      else if (c === '\\' && quote === '"' && i + 1 < line.length) cur += line[++i];
      else cur += c;
    } else if (c === '"' || c === "'") {
      quote = c;
      inWord = true;
    } else if (c === '\\' && i + 1 < line.length) {
      cur += line[++i];
      inWord = true;
    } else if (/\s/.test(c)) {
      if (inWord) words.push(cur);
      cur = '';
      inWord = false;
    } else {
      cur += c;
      inWord = true;
    }
  }
  if (quote) throw new Error(`unterminated ${quote} quote in command line: ${line}`);
  if (inWord) words.push(cur);
  return words;
}

export function createTransport(
  url: string,
  kind: UpstreamKind,
  settings: TransportSettings,
): Transport {
  let inner: Transport;
  if (kind === 'stdio') {
    const [command, ...args] = splitCommandLine(url.slice('stdio:'.length));
    if (!command) throw new Error('stdio: needs a command line, e.g. stdio:node server.js');
    const stdio = new StdioClientTransport({
      command,
      args,
      env: { ...getDefaultEnvironment(), ...settings.env },
      cwd: settings.cwd,
      stderr: 'pipe',
    });
    // The child's stderr is drained so a chatty server cannot fill the pipe and stall.
    stdio.stderr?.on('data', () => undefined);
    inner = stdio;
  } else {
    const requestInit: RequestInit = { headers: settings.headers ?? {} };
    inner =
      kind === 'sse'
        ? new SSEClientTransport(new URL(url), {
            requestInit,
            fetch: settings.fetch,
            authProvider: settings.authProvider,
          })
        : new StreamableHTTPClientTransport(new URL(url), {
            requestInit,
            fetch: settings.fetch,
            authProvider: settings.authProvider,
            // Reconnecting a dropped GET stream is the connection's job, not the transport's.
            reconnectionOptions: {
              maxReconnectionDelay: 30_000,
              initialReconnectionDelay: 1000,
              reconnectionDelayGrowFactor: 2,
              maxRetries: 2,
            },
          });
  }
  return recording(inner, settings);
}

/** Sends `message`, freeing the gate's place of the request it answers once it is out. */
function gatedSend(
  gate: RequestGate,
  send: (m: JSONRPCMessage, o?: unknown) => Promise<void>,
  message: JSONRPCMessage,
  options: unknown,
): Promise<void> {
  if (!gate.answers(message)) return send(message, options);
  const id = (message as { id: string | number }).id;
  const sent = send(message, options);
  sent.then(
    () => gate.done(id),
    () => gate.done(id),
  );
  return sent;
}

/**
 * Wraps a transport so every incoming message is seen before the client handles it, and so
 * responses keep their place behind the notifications sent before them: the SDK client hands a
 * notification to its handler a microtask later but settles a response at once, so a progress
 * notification arriving just ahead of its call's result found its handler already gone.
 */
function recording(inner: Transport, settings: TransportSettings): Transport {
  const onIncoming = settings.onIncoming;
  const onSpawn = settings.onSpawn;
  const gate = settings.gate;
  return new Proxy(inner, {
    set(target, prop, value: unknown) {
      if (prop === 'onmessage' && typeof value === 'function') {
        const handler = value as (m: JSONRPCMessage, extra?: unknown) => void;
        (target as unknown as Record<string, unknown>).onmessage = (
          m: JSONRPCMessage,
          extra?: unknown,
        ) => {
          // A request past the gate's bounds is dropped before anything handles it.
          if (gate && 'method' in m) {
            if (!('id' in m)) gate.notified();
            else if (!gate.admit(m.id as string | number)) return;
          }
          onIncoming?.(m);
          if ('method' in m) handler(m, extra);
          else queueMicrotask(() => handler(m, extra));
        };
        return true;
      }
      (target as unknown as Record<string | symbol, unknown>)[prop] = value;
      return true;
    },
    get(target, prop) {
      const v = (target as unknown as Record<string | symbol, unknown>)[prop];
      if (prop === 'send' && typeof v === 'function' && gate) {
        const send = (v as (m: JSONRPCMessage, o?: unknown) => Promise<void>).bind(target);
        return (message: JSONRPCMessage, options?: unknown) =>
          gatedSend(gate, send, message, options);
      }
      if (prop === 'start' && typeof v === 'function' && onSpawn) {
        return async () => {
          await (v as () => Promise<void>).call(target);
          const pid = (target as unknown as { pid?: number | null }).pid;
          if (typeof pid === 'number') onSpawn(pid);
        };
      }
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
}
