/**
 * The hot path of a proxied call to a Streamable HTTP upstream: `tools/call`, `prompts/get` and
 * `resources/read` sent as raw JSON-RPC over a keep-alive node:http(s) Agent, on the session the
 * SDK client negotiated. The SDK client over `fetch` cost ~1.9 ms of hub CPU a call (undici, web
 * streams, AbortSignal chains, a zod pass over a result the hub passes on as it is); this costs a
 * fraction of that. The answer may be JSON or an event stream: progress for this request is
 * relayed, a stream that ends cleanly after an event id is resumed with a GET (SSE polling), and
 * every other message on the stream (log messages, sampling/elicitation requests) is handed to
 * the SDK client as if its own transport had read it. A 2026-07-28 `input_required` answer comes
 * back as INPUT_REQUIRED: the caller runs that call through the SDK, which drives the rounds.
 */
import { Agent as HttpAgent, request as httpRequest } from 'node:http';
import type { ClientRequest, OutgoingHttpHeaders } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import {
  CLIENT_CAPABILITIES_META_KEY,
  CLIENT_INFO_META_KEY,
  PROTOCOL_VERSION_META_KEY,
} from '@modelcontextprotocol/client';
import { SlotTable } from '../slot-table.js';
import { DirectCall } from './direct-call.js';
import type { CallOwner, DirectOptions, DirectSession, INPUT_REQUIRED } from './direct-types.js';
import {
  FIELD_VALUE,
  LOG_LEVEL_META_KEY,
  NAME_FIELD,
  TOKEN,
  headerValue,
  type DirectMethod,
} from './direct-wire.js';
import type { RawHttpPool } from './raw-http.js';

export type { DirectMethod } from './direct-wire.js';
export {
  DEFAULT_ANSWER_BYTES,
  INPUT_REQUIRED,
  type CallerSource,
  type DirectOptions,
  type DirectSession,
  type ProgressSink,
} from './direct-types.js';

let nextId = 1;

/** One connected session's direct path; made anew for every SDK client (session). */
export class DirectHttp implements CallOwner {
  readonly session: DirectSession;
  private readonly agent: HttpAgent;
  private readonly send: typeof httpRequest;
  private readonly host: string;
  private readonly port: number;
  private readonly path: string;
  /**
   * Request headers as flat name/value pairs, which node:http takes without a setHeader pass:
   * 2025, one set for all calls; 2026-07-28, one per method and name (Mcp-Method, Mcp-Name).
   */
  private readonly legacyHeaders: string[] | undefined;
  private readonly modernHeaders = new Map<string, string[]>();
  private readonly base: string[];
  /** Calls in flight, failed together when the connection is lost (slot-table.ts: why not a Set). */
  readonly live = new SlotTable<DirectCall>();
  /** The `_meta` envelope after the progress token, as JSON without its opening brace. */
  private readonly metaTail: string;
  /** Plain-http upstreams: the lean client's sockets (raw-http.ts); else node:http for all. */
  readonly pool: RawHttpPool | undefined;
  /** Each header list's request head for the lean client (undefined: a value it cannot send). */
  private readonly heads = new WeakMap<string[], string | undefined>();

  constructor(session: DirectSession, agent: HttpAgent, pool?: RawHttpPool) {
    this.session = session;
    this.agent = agent;
    this.pool = pool;
    const url = session.url;
    const https = url.protocol === 'https:';
    this.send = https ? (httpsRequest as unknown as typeof httpRequest) : httpRequest;
    this.host = url.hostname.replace(/^\[(.*)\]$/, '$1');
    this.port = Number(url.port) || (https ? 443 : 80);
    this.path = url.pathname + url.search;
    const named: Record<string, string> = { host: url.host };
    for (const [k, v] of Object.entries(session.headers)) named[k.toLowerCase()] = v;
    named['content-type'] = 'application/json';
    named.accept = 'application/json, text/event-stream';
    named['mcp-protocol-version'] = session.protocolVersion;
    if (session.era === 'legacy' && session.sessionId !== undefined)
      named['mcp-session-id'] = session.sessionId;
    const base = Object.entries(named).flat();
    this.base = base;
    this.legacyHeaders = session.era === 'legacy' ? base : undefined;
    const envelope =
      session.era === 'modern'
        ? JSON.stringify({
            [PROTOCOL_VERSION_META_KEY]: session.protocolVersion,
            [CLIENT_INFO_META_KEY]: session.clientInfo,
            [CLIENT_CAPABILITIES_META_KEY]: session.capabilities,
            [LOG_LEVEL_META_KEY]: 'debug',
          })
        : '{}';
    this.metaTail = envelope === '{}' ? '}' : `,${envelope.slice(1)}`;
  }

  private headersFor(method: DirectMethod, name: string): string[] {
    if (this.legacyHeaders !== undefined) return this.legacyHeaders;
    const key = `${method}\n${name}`;
    let h = this.modernHeaders.get(key);
    if (h === undefined) {
      h = this.base.concat('mcp-method', method, 'mcp-name', headerValue(name));
      // Bounded: an upstream's names are few, but resource URIs need not be.
      if (this.modernHeaders.size > 1000) this.modernHeaders.clear();
      this.modernHeaders.set(key, h);
    }
    return h;
  }

  /** Sends one request; resolves with its raw result (or INPUT_REQUIRED), rejects as the SDK would. */
  call(
    method: DirectMethod,
    params: Record<string, unknown>,
    opts: DirectOptions,
  ): Promise<Record<string, unknown> | typeof INPUT_REQUIRED> {
    // Params are never empty here (a name or a uri), so `_meta` follows a comma.
    const id = `moonhub-${nextId++}`;
    const name = params[NAME_FIELD[method]];
    // A `_meta` of the caller's (Botster's context, the W3C trace context from the observe hook)
    // joins ours; a traceparent in it also goes out as a header.
    const extra = params._meta as Record<string, unknown> | undefined;
    let body: string;
    let traceHeader: string[] | undefined;
    if (extra === undefined) {
      body =
        `{"jsonrpc":"2.0","id":"${id}","method":"${method}","params":` +
        JSON.stringify(params).slice(0, -1) +
        `,"_meta":{"progressToken":"${id}"${this.metaTail}}}`;
    } else {
      const { _meta: _extra, ...rest } = params;
      const more = JSON.stringify(extra).slice(1, -1);
      body =
        `{"jsonrpc":"2.0","id":"${id}","method":"${method}","params":` +
        JSON.stringify(rest).slice(0, -1) +
        `,"_meta":{"progressToken":"${id}"${more === '' ? '' : ',' + more}${this.metaTail}}}`;
      if (typeof extra.traceparent === 'string') traceHeader = ['traceparent', extra.traceparent];
    }
    return new Promise((resolve, reject) => {
      const call = new DirectCall(
        this,
        id,
        method,
        body,
        this.headersFor(method, typeof name === 'string' ? name : ''),
        traceHeader,
        opts,
        resolve,
        reject,
      );
      call.start();
    });
  }

  /**
   * The request head for the lean client, made once per header list: node:http's checks of
   * header names and values, once; a list that fails them goes through node:http, which says why.
   */
  headOf(list: string[]): string | undefined {
    if (this.heads.has(list)) return this.heads.get(list);
    let head: string | undefined = `POST ${this.path} HTTP/1.1\r\n`;
    for (let i = 0; i < list.length; i += 2) {
      const [k, v] = [list[i]!, list[i + 1]!];
      if (!TOKEN.test(k) || !FIELD_VALUE.test(v)) {
        head = undefined;
        break;
      }
      head += `${k}: ${v}\r\n`;
    }
    if (head !== undefined) head += 'connection: keep-alive\r\n';
    this.heads.set(list, head);
    return head;
  }

  abortAll(reason: Error): void {
    for (const call of [...this.live.values()]) call.abort(reason);
  }

  /** Opens one HTTP request to the upstream; the caller wires its events. */
  open(method: 'POST' | 'GET', headers: OutgoingHttpHeaders | string[]): ClientRequest {
    return this.send({
      agent: this.agent,
      host: this.host,
      port: this.port,
      path: this.path,
      method,
      headers,
    });
  }
}

/** A keep-alive agent for one upstream's direct calls. */
export function directAgent(url: URL): HttpAgent {
  return url.protocol === 'https:'
    ? (new HttpsAgent({ keepAlive: true }) as unknown as HttpAgent)
    : new HttpAgent({ keepAlive: true });
}
