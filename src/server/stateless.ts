/**
 * The 2026-07-28 stateless revision: telling a POST's era from its body envelope and headers
 * (with the SDK's rejection codes), and the `subscriptions/listen` streams that carry
 * list_changed to modern clients.
 */
import type { IncomingHttpHeaders, ServerResponse } from 'node:http';
import type { EntryKind } from '../registry/types.js';
import {
  HEADER_MISMATCH,
  INVALID_PARAMS,
  UNSUPPORTED_PROTOCOL_VERSION,
  isPlainObject,
  serializeError,
  serializeNotification,
  serializeResult,
  type JsonRpcId,
} from './jsonrpc.js';
import { LIST_CHANGED_METHOD, type ChangeSink, type ListChangedFanout } from './list-changed.js';
import {
  CLIENT_CAPABILITIES_META_KEY,
  MCP_NAME_SOURCE,
  MODERN_PROTOCOL_VERSIONS,
  PROTOCOL_VERSION_META_KEY,
  SERVER_INFO_META_KEY,
  SUBSCRIPTION_ID_META_KEY,
  decodeHeaderValue,
  isModernVersion,
  type Implementation,
} from './protocol.js';
import { SseStream } from './sse.js';

export type PostRoute =
  | { kind: 'legacy' }
  | { kind: 'modern'; version: string; clientCapabilities: Record<string, unknown> | undefined }
  | { kind: 'reject'; status: number; code: number; message: string; data?: unknown };

function header(headers: IncomingHttpHeaders, name: string): string | undefined {
  const v = headers[name];
  if (v === undefined) return undefined;
  return (Array.isArray(v) ? v[0]! : v).trim();
}

function mismatch(detail: string, headerValue: string): PostRoute {
  return {
    kind: 'reject',
    status: 400,
    code: HEADER_MISMATCH,
    message: `Bad Request: the request headers and body disagree: ${detail}`,
    data: { mismatch: { header: headerValue, body: detail } },
  };
}

function badEnvelope(message: string, data: unknown): PostRoute {
  return { kind: 'reject', status: 400, code: INVALID_PARAMS, message, data };
}

/**
 * Routes one POSTed request or notification (not a response or batch) to an era. The body's
 * `_meta` envelope decides; the `MCP-Protocol-Version` header cross-checks it; 2026 requests must
 * also carry `Mcp-Method` and, for named methods, `Mcp-Name`.
 */
export function routePost(
  msg: { method: string; params?: Record<string, unknown> },
  isRequest: boolean,
  headers: IncomingHttpHeaders,
): PostRoute {
  const method = msg.method;
  const params = msg.params;
  const pv = header(headers, 'mcp-protocol-version');
  const mm = header(headers, 'mcp-method');
  const pvModern = pv !== undefined && isModernVersion(pv);
  const meta = params !== undefined && isPlainObject(params._meta) ? params._meta : undefined;
  const hasClaim = meta !== undefined && PROTOCOL_VERSION_META_KEY in meta;

  if (!hasClaim) {
    if (isRequest && method === 'initialize') {
      return pvModern
        ? mismatch('an initialize request was sent with a modern MCP-Protocol-Version header', pv)
        : LEGACY;
    }
    if (!pvModern) return LEGACY;
    if (!isRequest) {
      if (mm !== undefined && mm !== method)
        return mismatch(`the body names method ${method} but Mcp-Method names ${mm}`, mm);
      return modernOrUnsupported(pv, undefined);
    }
    const missing = meta === undefined ? ['_meta'] : [PROTOCOL_VERSION_META_KEY];
    return badEnvelope(
      `Invalid params: the MCP-Protocol-Version header names protocol revision ${pv}, but the request is missing the required per-request envelope key(s): ${missing.join(', ')}`,
      { envelope: { missing } },
    );
  }

  const claimed = meta[PROTOCOL_VERSION_META_KEY];
  if (typeof claimed !== 'string') {
    return badEnvelope(
      `Invalid _meta envelope for protocol revision 2026-07-28: ${PROTOCOL_VERSION_META_KEY}: expected a protocol version string`,
      {
        envelope: { key: PROTOCOL_VERSION_META_KEY, problem: 'expected a protocol version string' },
      },
    );
  }
  const caps = meta[CLIENT_CAPABILITIES_META_KEY];
  if (isRequest && !isPlainObject(caps)) {
    const problem = caps === undefined ? 'missing' : 'expected an object';
    return badEnvelope(
      `Invalid _meta envelope for protocol revision 2026-07-28: ${CLIENT_CAPABILITIES_META_KEY}: ${problem}`,
      { envelope: { key: CLIENT_CAPABILITIES_META_KEY, problem } },
    );
  }
  if (pv !== undefined && pv !== claimed) {
    return mismatch(
      `the body envelope names protocol version ${claimed} but the MCP-Protocol-Version header names ${pv}`,
      pv,
    );
  }
  if (mm !== undefined && mm !== method) {
    return mismatch(`the body names method ${method} but the Mcp-Method header names ${mm}`, mm);
  }
  if (!isModernVersion(claimed)) {
    // An envelope naming a 2025 revision: serve it the 2025 way.
    return LEGACY;
  }
  if (isRequest) {
    if (pv === undefined) {
      return mismatch(
        `the body envelope names protocol version ${claimed} but the required MCP-Protocol-Version header is absent`,
        '(missing)',
      );
    }
    if (mm === undefined) {
      return mismatch(
        `the body names method ${method} but the required Mcp-Method header is absent`,
        '(missing)',
      );
    }
    const field = Object.hasOwn(MCP_NAME_SOURCE, method) ? MCP_NAME_SOURCE[method] : undefined;
    if (field !== undefined) {
      const bodyValue = typeof params![field] === 'string' ? (params![field] as string) : undefined;
      const mn = header(headers, 'mcp-name');
      if (mn === undefined) {
        if (bodyValue !== undefined) {
          return mismatch(
            `the body carries params.${field}="${bodyValue}" but the required Mcp-Name header is absent`,
            '(missing)',
          );
        }
      } else {
        const decoded = decodeHeaderValue(mn);
        if (decoded === undefined)
          return mismatch('the Mcp-Name header carries an invalid Base64 sentinel value', mn);
        if (bodyValue !== undefined && decoded !== bodyValue) {
          return mismatch(
            `the body carries params.${field}="${bodyValue}" but the Mcp-Name header names "${decoded}"`,
            mn,
          );
        }
      }
    }
  }
  return modernOrUnsupported(claimed, isPlainObject(caps) ? caps : undefined);
}

const LEGACY: PostRoute = { kind: 'legacy' };

function modernOrUnsupported(
  version: string,
  caps: Record<string, unknown> | undefined,
): PostRoute {
  if (MODERN_PROTOCOL_VERSIONS.includes(version))
    return { kind: 'modern', version, clientCapabilities: caps };
  return {
    kind: 'reject',
    status: 400,
    code: UNSUPPORTED_PROTOCOL_VERSION,
    message: `Unsupported protocol version: ${version}`,
    data: { supported: [...MODERN_PROTOCOL_VERSIONS], requested: version },
  };
}

/** The kinds a `subscriptions/listen` filter asks for and this server honours. */
export interface ListenFilter {
  toolsListChanged?: true;
  promptsListChanged?: true;
  resourcesListChanged?: true;
  resourceSubscriptions?: string[];
}

/** Parses `params.notifications`; undefined when it is not a filter object. */
export function parseListenFilter(
  params: Record<string, unknown> | undefined,
): ListenFilter | undefined {
  const n = params?.notifications;
  if (!isPlainObject(n)) return undefined;
  const honored: ListenFilter = {};
  if (n.toolsListChanged === true) honored.toolsListChanged = true;
  if (n.promptsListChanged === true) honored.promptsListChanged = true;
  if (n.resourcesListChanged === true) honored.resourcesListChanged = true;
  const uris = n.resourceSubscriptions;
  if (Array.isArray(uris)) {
    const strings = uris.filter((u): u is string => typeof u === 'string');
    if (strings.length > 0) honored.resourceSubscriptions = strings;
  }
  return honored;
}

export function filterKinds(filter: ListenFilter): Set<EntryKind> {
  const kinds = new Set<EntryKind>();
  if (filter.toolsListChanged) kinds.add('tools');
  if (filter.promptsListChanged) kinds.add('prompts');
  if (filter.resourcesListChanged) kinds.add('resources');
  return kinds;
}

/** The frames of one subscription, serialised once when it opens. */
export function listenFrames(
  id: JsonRpcId,
  filter: ListenFilter,
  serverInfo: Implementation,
): {
  ack: string;
  notes: Record<EntryKind, string>;
  close: string;
  updated: (uri: string) => string;
} {
  const stamp = { [SUBSCRIPTION_ID_META_KEY]: id };
  const note = (kind: EntryKind): string =>
    serializeNotification(LIST_CHANGED_METHOD[kind], { _meta: stamp });
  return {
    ack: serializeNotification('notifications/subscriptions/acknowledged', {
      notifications: filter,
      _meta: stamp,
    }),
    notes: { tools: note('tools'), prompts: note('prompts'), resources: note('resources') },
    updated: (uri) =>
      serializeNotification('notifications/resources/updated', { uri, _meta: stamp }),
    close: serializeResult(id, {
      resultType: 'complete',
      _meta: { [SUBSCRIPTION_ID_META_KEY]: id, [SERVER_INFO_META_KEY]: serverInfo },
    }),
  };
}

/** The open `subscriptions/listen` SSE streams of the HTTP server. */
export class ListenStreams {
  private readonly open = new Set<() => void>();

  constructor(
    private readonly fanout: ListChangedFanout,
    private readonly serverInfo: Implementation,
    private readonly maxStreams = 1024,
    /** Registers a listener for resource updates; returns its remover. */
    private readonly onResourceUpdated?: (listener: (uri: string) => void) => () => void,
  ) {}

  get size(): number {
    return this.open.size;
  }

  /** Answers a listen request: an SSE stream that stays open until either side closes it. */
  serve(
    res: ServerResponse,
    id: JsonRpcId,
    params: Record<string, unknown> | undefined,
    principal?: string,
  ): void {
    const filter = parseListenFilter(params);
    if (filter === undefined) {
      sendJson(
        res,
        200,
        serializeError(
          id,
          INVALID_PARAMS,
          "Invalid params: 'notifications' is required and must be a valid SubscriptionFilter",
        ),
      );
      return;
    }
    if (this.open.size >= this.maxStreams) {
      sendJson(res, 200, serializeError(id, -32603, 'Subscription limit reached'));
      return;
    }
    const frames = listenFrames(id, filter, this.serverInfo);
    const kinds = filterKinds(filter);
    let removeSink: (() => void) | undefined = undefined;
    let removeUpdates: (() => void) | undefined = undefined;
    const graceful = (): void => {
      stream.send(frames.close);
      stream.end();
    };
    const stream = new SseStream(res, {}, () => {
      removeSink?.();
      removeUpdates?.();
      this.open.delete(graceful);
    });
    stream.send(frames.ack);
    const uris = filter.resourceSubscriptions;
    if (kinds.size === 0 && uris === undefined) {
      graceful();
      return;
    }
    if (uris !== undefined && this.onResourceUpdated) {
      const wanted = new Set(uris);
      removeUpdates = this.onResourceUpdated((uri) => {
        if (wanted.has(uri)) stream.send(frames.updated(uri));
      });
    }
    const sink: ChangeSink = {
      kinds,
      principal,
      deliver: (kind) => stream.send(frames.notes[kind]),
    };
    removeSink = this.fanout.add(sink);
    this.open.add(graceful);
  }

  /** Ends every stream with the graceful-close result (server shutdown). */
  closeAll(): void {
    for (const graceful of [...this.open]) graceful();
    this.open.clear();
  }
}

export function sendJson(
  res: ServerResponse,
  status: number,
  body: string,
  headers?: Record<string, string>,
): void {
  // A Content-Length (instead of chunked encoding) lets the client finish reading without a trailer.
  const length = String(Buffer.byteLength(body));
  res.writeHead(
    status,
    headers
      ? { 'Content-Type': 'application/json', 'Content-Length': length, ...headers }
      : { 'Content-Type': 'application/json', 'Content-Length': length },
  );
  res.end(body);
}

/** The `x-mcp-header` parameters of an input schema, found once per schema object. */
const paramHeaders = new WeakMap<object, [param: string, header: string][]>();

function headersOf(schema: Record<string, unknown>): [string, string][] {
  let found = paramHeaders.get(schema);
  if (found === undefined) {
    found = [];
    const props = schema.properties;
    if (isPlainObject(props)) {
      for (const [param, def] of Object.entries(props)) {
        const suffix = isPlainObject(def) ? def['x-mcp-header'] : undefined;
        if (typeof suffix === 'string' && suffix !== '')
          found.push([param, 'mcp-param-' + suffix.toLowerCase()]);
      }
    }
    paramHeaders.set(schema, found);
  }
  return found;
}

/**
 * 2026-07-28 (SEP-2243): a tool parameter marked `x-mcp-header: "Name"` travels in the body and
 * in an `Mcp-Param-Name` header; the two must agree (Base64 sentinel values decoded first).
 * Returns the rejection, or undefined when they agree.
 */
export function checkParamHeaders(
  schema: Record<string, unknown>,
  args: unknown,
  headers: IncomingHttpHeaders,
): PostRoute | undefined {
  const list = headersOf(schema);
  if (list.length === 0) return undefined;
  const given = isPlainObject(args) ? args : {};
  for (const [param, name] of list) {
    const raw = header(headers, name);
    const value = given[param];
    const body = value === undefined || value === null ? undefined : String(value);
    if (raw === undefined) {
      if (body !== undefined)
        return mismatch(
          `the body carries arguments.${param} but the required ${name} header is absent`,
          '(missing)',
        );
      continue;
    }
    const decoded = decodeHeaderValue(raw);
    if (decoded === undefined)
      return mismatch(`the ${name} header carries an invalid Base64 sentinel value`, raw);
    if (decoded !== body)
      return mismatch(
        `the body carries arguments.${param}=${JSON.stringify(body)} but the ${name} header names ${JSON.stringify(decoded)}`,
        raw,
      );
  }
  return undefined;
}
