/**
 * MCP over stdio: newline-delimited JSON-RPC on a pair of streams, served by the same dispatcher
 * as one 2025 session (2026-07-28 enveloped messages are answered statelessly). Only JSON-RPC
 * messages are ever written to the output.
 */
import type { Readable, Writable } from 'node:stream';
import type { Registry } from '../registry/registry.js';
import type { EntryKind } from '../registry/types.js';
import { RequestChannel } from './call-peer.js';
import {
  createMcpDispatcher,
  newSessionState,
  type DispatcherOptions,
  type McpDispatcher,
  type RequestScope,
} from './dispatcher.js';
import {
  INVALID_PARAMS,
  INVALID_REQUEST,
  PARSE_ERROR,
  UNSUPPORTED_PROTOCOL_VERSION,
  classifyMessage,
  echoableId,
  isPlainObject,
  serializeError,
  serializeNotification,
  type JsonRpcId,
  type JsonRpcNotification,
  type JsonRpcRequest,
} from './jsonrpc.js';
import {
  ALL_KINDS,
  LIST_CHANGED_METHOD,
  ListChangedFanout,
  type FanoutOptions,
} from './list-changed.js';
import {
  BATCH_VERSIONS,
  CLIENT_CAPABILITIES_META_KEY,
  DEFAULT_MAX_BODY_BYTES,
  MODERN_PROTOCOL_VERSIONS,
  PROTOCOL_VERSION_META_KEY,
  isModernVersion,
} from './protocol.js';
import { filterKinds, listenFrames, parseListenFilter } from './stateless.js';

/** One stdio request's channel: its messages go out as lines of the shared output. */
class StdioChannel extends RequestChannel {
  constructor(private readonly write: (line: string) => void) {
    super();
  }

  override send(json: string): boolean {
    this.write(json);
    return true;
  }
}

export interface StdioOptions extends DispatcherOptions, FanoutOptions {
  input: Readable;
  output: Writable;
  /** Longest accepted line in bytes (default 4 MiB). */
  maxLineBytes?: number;
  dispatcher?: McpDispatcher;
  /** Who the peer acts for (`serve --stdio --session`); default: nobody in particular. */
  principal?: string;
}

export interface StdioServer {
  readonly dispatcher: McpDispatcher;
  /** Resolves when the input ends (the client went away) or close() is called. */
  readonly closed: Promise<void>;
  close(): void;
}

export function serveStdio(registry: Registry, opts: StdioOptions): StdioServer {
  const { input, output } = opts;
  const dispatcher = opts.dispatcher ?? createMcpDispatcher(registry, opts);
  const maxLine = opts.maxLineBytes ?? DEFAULT_MAX_BODY_BYTES;
  const session = newSessionState(undefined);
  session.principal = opts.principal;
  const legacyScope: RequestScope = {
    era: 'legacy',
    protocolVersion: session.protocolVersion,
    session,
    principal: opts.principal,
  };
  const fanout = new ListChangedFanout(registry, opts);
  /** 2026 subscriptions on this connection, by listen request id. */
  const listens = new Map<JsonRpcId, { remove: () => void; close: string }>();
  let open = true;
  let resolveClosed!: () => void;
  const closed = new Promise<void>((r) => (resolveClosed = r));

  const write = (line: string): void => {
    if (open) output.write(line + '\n');
  };

  // Subscribed resources changed: the peer hears of those it subscribed to.
  const removeUpdateListener = registry.onResourceUpdated((uri) => {
    if (session.subscriptions?.has(uri))
      write(serializeNotification('notifications/resources/updated', { uri }));
  });

  // The one 2025 peer hears about every change once it has initialized.
  const removeLegacySink = fanout.add({
    kinds: ALL_KINDS,
    principal: opts.principal,
    deliver: (kind: EntryKind) => {
      if (session.initialized) write(serializeNotification(LIST_CHANGED_METHOD[kind]));
    },
  });

  let buffered: Buffer[] = [];
  let bufferedBytes = 0;
  let skipping = false;
  const onData = (chunk: Buffer | string): void => {
    let buf = typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk;
    let nl = buf.indexOf(10);
    while (nl !== -1) {
      const part = buf.subarray(0, nl);
      if (!skipping) {
        const line = bufferedBytes === 0 ? part : Buffer.concat([...buffered, part]);
        if (bufferedBytes + part.length <= maxLine) handleLine(line.toString('utf8'));
        else write(serializeError(null, INVALID_REQUEST, `Message exceeds ${maxLine} bytes`));
      }
      buffered = [];
      bufferedBytes = 0;
      skipping = false;
      buf = buf.subarray(nl + 1);
      nl = buf.indexOf(10);
    }
    if (buf.length > 0 && !skipping) {
      bufferedBytes += buf.length;
      if (bufferedBytes > maxLine) {
        // Drop the rest of this line; answer once its end arrives.
        write(serializeError(null, INVALID_REQUEST, `Message exceeds ${maxLine} bytes`));
        buffered = [];
        skipping = true;
      } else buffered.push(buf);
    }
  };

  function handleLine(text: string): void {
    if (text.trim() === '') return;
    let msg: unknown;
    try {
      msg = JSON.parse(text);
    } catch {
      write(serializeError(null, PARSE_ERROR, 'Parse error: Invalid JSON'));
      return;
    }
    if (Array.isArray(msg)) {
      handleBatch(msg);
      return;
    }
    handleMessage(msg);
  }

  function handleBatch(batch: unknown[]): void {
    if (batch.length === 0 || !BATCH_VERSIONS.has(session.protocolVersion)) {
      write(
        serializeError(
          null,
          INVALID_REQUEST,
          batch.length === 0
            ? 'Invalid Request: empty JSON-RPC batch'
            : `Invalid Request: JSON-RPC batches are not supported on protocol revision ${session.protocolVersion}`,
        ),
      );
      return;
    }
    const pending: Promise<string>[] = [];
    for (const el of batch) {
      const kind = classifyMessage(el);
      if (kind === 'request') pending.push(runRequest(el as JsonRpcRequest, legacyScope));
      else if (kind === 'notification')
        dispatcher.handleNotification(el as JsonRpcNotification, legacyScope);
      else if (kind === 'invalid')
        pending.push(
          Promise.resolve(serializeError(echoableId(el), INVALID_REQUEST, 'Invalid Request')),
        );
    }
    if (pending.length > 0)
      void Promise.all(pending).then((outs) => write('[' + outs.join(',') + ']'));
  }

  function handleMessage(msg: unknown): void {
    const kind = classifyMessage(msg);
    if (kind === 'invalid') {
      write(serializeError(echoableId(msg), INVALID_REQUEST, 'Invalid Request'));
      return;
    }
    if (kind === 'response') {
      dispatcher.handleResponse(msg as Record<string, unknown>, session);
      return;
    }
    const m = msg as JsonRpcRequest;
    const meta =
      isPlainObject(m.params) && isPlainObject(m.params._meta) ? m.params._meta : undefined;
    const claim = meta?.[PROTOCOL_VERSION_META_KEY];
    if (typeof claim === 'string' && isModernVersion(claim)) {
      handleModern(m, kind === 'request', claim, meta![CLIENT_CAPABILITIES_META_KEY]);
      return;
    }
    if (kind === 'notification') {
      const n = msg as JsonRpcNotification;
      if (n.method === 'notifications/cancelled') cancelListen(n.params?.requestId);
      dispatcher.handleNotification(n, legacyScope);
      return;
    }
    void runRequest(m, legacyScope).then((out) => {
      legacyScope.protocolVersion = session.protocolVersion;
      write(out);
    });
  }

  function handleModern(
    m: JsonRpcRequest,
    isRequest: boolean,
    version: string,
    caps: unknown,
  ): void {
    if (!isRequest) {
      if (m.method === 'notifications/cancelled') cancelListen(m.params?.requestId);
      return;
    }
    if (!MODERN_PROTOCOL_VERSIONS.includes(version)) {
      write(
        serializeError(
          m.id,
          UNSUPPORTED_PROTOCOL_VERSION,
          `Unsupported protocol version: ${version}`,
          {
            supported: [...MODERN_PROTOCOL_VERSIONS],
            requested: version,
          },
        ),
      );
      return;
    }
    if (!isPlainObject(caps)) {
      write(
        serializeError(
          m.id,
          INVALID_PARAMS,
          `Invalid _meta envelope for protocol revision ${version}: ${CLIENT_CAPABILITIES_META_KEY}: missing`,
        ),
      );
      return;
    }
    if (m.method === 'subscriptions/listen') {
      openListen(m);
      return;
    }
    const scope: RequestScope = {
      era: 'modern',
      protocolVersion: version,
      session: undefined,
      clientCapabilities: caps,
      principal: opts.principal,
    };
    void runRequest(m, scope).then(write);
  }

  function openListen(m: JsonRpcRequest): void {
    const filter = parseListenFilter(m.params);
    if (filter === undefined) {
      write(
        serializeError(
          m.id,
          INVALID_PARAMS,
          "Invalid params: 'notifications' is required and must be a valid SubscriptionFilter",
        ),
      );
      return;
    }
    const frames = listenFrames(m.id, filter, dispatcher.serverInfo);
    write(frames.ack);
    const kinds = filterKinds(filter);
    const uris = filter.resourceSubscriptions;
    if (kinds.size === 0 && uris === undefined) {
      write(frames.close);
      return;
    }
    listens.get(m.id)?.remove();
    const removeSink = fanout.add({
      kinds,
      principal: opts.principal,
      deliver: (kind) => write(frames.notes[kind]),
    });
    const wanted = new Set(uris);
    const removeUpdates = registry.onResourceUpdated((uri) => {
      if (wanted.has(uri)) write(frames.updated(uri));
    });
    const remove = (): void => {
      removeSink();
      removeUpdates();
    };
    listens.set(m.id, { remove, close: frames.close });
  }

  function cancelListen(id: unknown): void {
    if (typeof id !== 'string' && typeof id !== 'number') return;
    const sub = listens.get(id);
    if (sub) {
      sub.remove();
      listens.delete(id);
    }
  }

  function runRequest(m: JsonRpcRequest, scope: RequestScope): Promise<string> {
    // A channel per request: notifications/cancelled aborts it, and messages sent while the
    // call runs go out as lines before its answer.
    return dispatcher.handleRequest(m, scope, new StdioChannel(write));
  }

  function close(): void {
    if (!open) return;
    for (const sub of listens.values()) {
      sub.remove();
      write(sub.close);
    }
    listens.clear();
    open = false;
    removeLegacySink();
    removeUpdateListener();
    fanout.close();
    for (const ctl of session.inflight.values()) ctl.abort(new Error('stdio closed'));
    input.off('data', onData);
    input.off('end', close);
    resolveClosed();
  }

  input.on('data', onData);
  input.once('end', close);
  input.once('close', close);
  output.on('error', () => close());
  return { dispatcher, closed, close };
}
