/**
 * MCP over stdio: newline-delimited JSON-RPC on a pair of streams. This transport keeps what is
 * its own (lines, the one output, the one implicit 2025 session); what a message means is the
 * inbound layer's, as for HTTP. Only JSON-RPC messages are ever written to the output.
 */
import type { Readable, Writable } from 'node:stream';
import { localError, wireError, type WireError } from '../errors.js';
import { IdTable } from '../id-table.js';
import type { Registry } from '../registry/registry.js';
import type { EntryKind } from '../registry/types.js';
import { RequestChannel } from './channel.js';
import { createMcpDispatcher, type DispatcherOptions, type McpDispatcher } from './dispatcher.js';
import type { FlowLimits } from './flow-limits.js';
import { Inbound, type InboundFacts, type SessionSource } from './inbound.js';
import { jsonShapeRefusal } from './json-shape.js';
import {
  serializeNotification,
  serializeWireError,
  type JsonRpcId,
  type JsonRpcRequest,
} from './jsonrpc.js';
import {
  ALL_KINDS,
  LIST_CHANGED_METHOD,
  ListChangedFanout,
  type FanoutOptions,
} from './list-changed.js';
import { LineOutput } from './line-output.js';
import { Listens, type ListenWriter } from './listen.js';
import { DEFAULT_MAX_BODY_BYTES } from './protocol.js';
import { newSessionState, type RequestScope, type SessionState } from './session.js';

/**
 * One stdio request's channel: its messages go out as lines of the shared output. A call whose
 * messages find more than `limits.streams.buffer_bytes` waiting for the peer to read is aborted
 * (its answer, a short error, still goes out); the output as a whole has its own bound.
 */
class StdioChannel extends RequestChannel {
  constructor(
    private readonly write: (line: string) => void,
    private readonly output: LineOutput,
    private readonly flow: FlowLimits,
  ) {
    super();
  }

  override send(json: string): boolean {
    if (this.aborted) return false;
    if (this.output.waiting > this.flow.streamBufferBytes) {
      this.flow.refused?.('stream_buffer');
      this.cutOff = wireError('stream_overflow', { max: this.flow.streamBufferBytes });
      this.abort(this.cutOff);
      return false;
    }
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
  /**
   * The peer stopped reading: more than `limits.streams.stdio_buffer_bytes` waited on the output,
   * so the transport closed (default: one line on stderr). `serve --stdio` then exits.
   */
  onStalled?: (message: string) => void;
}

export interface StdioServer {
  readonly dispatcher: McpDispatcher;
  /** Resolves when the input ends (the client went away) or close() is called. */
  readonly closed: Promise<void>;
  close(): void;
}

/** Splits the input into lines within the size limit; answers an over-long line once. */
class LineReader {
  private buffered: Buffer[] = [];
  private bufferedBytes = 0;
  private skipping = false;

  constructor(
    private readonly maxLine: number,
    private readonly onLine: (line: string) => void,
    private readonly onTooLong: () => void,
  ) {}

  push(chunk: Buffer | string): void {
    let buf = typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk;
    let nl = buf.indexOf(10);
    while (nl !== -1) {
      const part = buf.subarray(0, nl);
      if (!this.skipping) {
        const line = this.bufferedBytes === 0 ? part : Buffer.concat([...this.buffered, part]);
        if (this.bufferedBytes + part.length <= this.maxLine) this.onLine(line.toString('utf8'));
        else this.onTooLong();
      }
      this.buffered = [];
      this.bufferedBytes = 0;
      this.skipping = false;
      buf = buf.subarray(nl + 1);
      nl = buf.indexOf(10);
    }
    if (buf.length > 0 && !this.skipping) {
      this.bufferedBytes += buf.length;
      if (this.bufferedBytes > this.maxLine) {
        // Drop the rest of this line; answer once, now.
        this.onTooLong();
        this.buffered = [];
        this.skipping = true;
      } else this.buffered.push(buf);
    }
  }
}

/** The stdio transport: one peer, one 2025 session, the shared inbound layer. */
class StdioTransport implements StdioServer, InboundFacts {
  readonly dispatcher: McpDispatcher;
  readonly closed: Promise<void>;
  readonly transport = 'stdio' as const;
  readonly headers = undefined;
  readonly principal: string | undefined;
  private readonly inbound: Inbound;
  private readonly session: SessionState;
  private readonly fanout: ListChangedFanout;
  private readonly listens: Listens;
  private readonly lines: LineReader;
  private readonly removers: (() => void)[] = [];
  /** Not a Map: entries live a request each and hold it (id-table.ts). */
  private readonly modernInflight = new IdTable<RequestChannel, JsonRpcId>();
  private readonly output: LineOutput;
  private open = true;
  /** Requests dispatched and not yet answered (batch members each), at most limits.stdio_in_flight. */
  private running = 0;
  private resolveClosed!: () => void;
  private readonly onData = (chunk: Buffer | string): void => this.lines.push(chunk);
  private readonly write = (line: string): void => {
    if (!this.open) return;
    this.output.line(line);
    if (this.output.waiting > this.dispatcher.flow.stdioBufferBytes) this.stalled();
  };
  /** Stdio's listen streams share the output and end with nothing to close. */
  private readonly listenWriter: ListenWriter = { send: this.write, end: () => {} };

  constructor(
    registry: Registry,
    private readonly opts: StdioOptions,
  ) {
    this.dispatcher = opts.dispatcher ?? createMcpDispatcher(registry, opts);
    this.output = new LineOutput(opts.output);
    this.inbound = new Inbound(this.dispatcher, opts.limits, opts.refused);
    this.principal = opts.principal;
    this.session = newSessionState(undefined);
    this.session.principal = opts.principal;
    this.fanout = new ListChangedFanout(registry, opts, this.dispatcher.flow.listChangedIntervalMs);
    this.listens = new Listens(
      this.fanout,
      this.dispatcher.serverInfo,
      (l) => registry.onResourceUpdated(l),
      this.inbound.limits,
      opts.refused,
    );
    this.closed = new Promise<void>((r) => (this.resolveClosed = r));
    const maxLine = opts.maxLineBytes ?? DEFAULT_MAX_BODY_BYTES;
    this.lines = new LineReader(
      maxLine,
      (line) => this.handleLine(line),
      () => this.write(serializeWireError(null, wireError('line_too_large', { max: maxLine }))),
    );
    // Subscribed resources changed: the peer hears of those it subscribed to.
    this.removers.push(
      registry.onResourceUpdated((uri) => {
        if (this.session.subscriptions?.has(uri))
          this.write(serializeNotification('notifications/resources/updated', { uri }));
      }),
      // The one 2025 peer hears about every change once it has initialized.
      this.fanout.add({
        kinds: ALL_KINDS,
        principal: opts.principal,
        deliver: (kind: EntryKind) => {
          if (this.session.initialized)
            this.write(serializeNotification(LIST_CHANGED_METHOD[kind]));
        },
      }),
    );
    this.close = this.close.bind(this);
    opts.input.on('data', this.onData);
    opts.input.once('end', this.close);
    opts.input.once('close', this.close);
    opts.output.on('error', () => this.close());
  }

  /**
   * A `notifications/cancelled` ends the listen stream it names, or aborts the 2026-07-28
   * request it names (2025 requests are cancelled through their session).
   */
  cancelled(requestId: unknown): void {
    this.listens.cancel(requestId);
    if (typeof requestId !== 'string' && typeof requestId !== 'number') return;
    const channel = this.modernInflight.get(requestId);
    if (channel === undefined) return;
    this.modernInflight.delete(requestId);
    channel.abort(localError('cancelled', { reason: 'cancelled' }));
  }

  /** One peer, one 2025 session: `initialize` (re)starts it, everything else is in it. */
  private readonly sessionSource: SessionSource = {
    open: () => this.session,
    find: () => this.session,
  };

  private handleLine(text: string): void {
    if (text.trim() === '') return;
    const limits = this.inbound.limits;
    const refusal = jsonShapeRefusal(
      text,
      limits.jsonDepth,
      limits.jsonContainers,
      limits.jsonObjectKeys,
    );
    if (refusal !== undefined) {
      this.opts.refused?.('json');
      return this.write(serializeWireError(null, refusal));
    }
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      this.write(serializeWireError(null, wireError('parse_error')));
      return;
    }
    const decision = this.inbound.decide(body, this, this.sessionSource);
    switch (decision.kind) {
      case 'reject':
        return this.write(serializeWireError(decision.id, decision.error));
      case 'handled':
        return;
      case 'listen': {
        const { msg, scope } = decision;
        if (this.idInUse(msg.id)) return;
        const refused: WireError | undefined = this.listens.subscribe(
          msg.id,
          msg.params,
          scope.principal,
          () => this.listenWriter,
          msg.id,
        );
        if (refused !== undefined) this.write(serializeWireError(msg.id, refused));
        return;
      }
      case 'request':
        if (decision.scope.era === 'modern' && this.idInUse(decision.msg.id)) return;
        if (this.full(decision.msg.id, 1)) return;
        return this.request(decision);
      case 'batch': {
        const n = decision.members.length;
        if (this.full(null, n)) return;
        this.running += n;
        const out = this.inbound.runBatch(decision, () => this.channel());
        if (out === undefined) this.running -= n;
        else
          void out.then((text) => {
            this.running -= n;
            this.write(text);
          });
        return;
      }
    }
  }

  /**
   * Runs one request on a channel of its own: notifications/cancelled aborts it, and messages
   * sent while the call runs go out as lines before its answer.
   */
  private request(decision: { msg: JsonRpcRequest; scope: RequestScope }): void {
    this.running++;
    const channel = this.channel();
    const id = decision.msg.id;
    // 2026-07-28 requests have no session to find them in: this connection keeps them.
    const modern = decision.scope.era === 'modern';
    if (modern) this.modernInflight.set(id, channel);
    void this.inbound.dispatch(decision, channel).then((out) => {
      this.running--;
      if (modern && this.modernInflight.get(id) === channel) this.modernInflight.delete(id);
      this.write(out);
    });
  }

  /**
   * Refuses (answers at once) a 2026-07-28 request or listen whose id names one still running
   * here: it would take that one's place, which could then no longer be cancelled, and the peer
   * could not tell the two answers apart. 2025 requests are checked against their session by
   * the dispatcher.
   */
  private idInUse(id: JsonRpcId): boolean {
    if (!this.modernInflight.has(id) && !this.listens.has(id)) return false;
    this.write(serializeWireError(id, wireError('request_id_in_use', { id: JSON.stringify(id) })));
    return true;
  }

  /**
   * Refuses (answers at once) a request that would take the peer past limits.stdio_in_flight:
   * lines arrive as fast as the pipe delivers them, and each dispatched call is held until it
   * ends (a flood of calls to a slow tool grew the hub by ~150 MiB a second). Notifications
   * (cancellations) are still read and handled.
   */
  private full(id: JsonRpcId | null, n: number): boolean {
    const max = this.inbound.limits.stdioInFlight;
    if (this.running + n <= max) return false;
    this.opts.refused?.('stdio_in_flight');
    this.write(serializeWireError(id, wireError('stdio_in_flight', { max })));
    return true;
  }

  /**
   * The one peer does not read its output: there is nobody else to serve, so the transport
   * closes (its calls aborted, the output dropped) rather than hold without bound.
   */
  private stalled(): void {
    const flow = this.dispatcher.flow;
    flow.refused?.('stream_buffer');
    const message = `moonhub: the stdio client stopped reading: more than ${flow.stdioBufferBytes} bytes waited on stdout (limits.streams.stdio_buffer_bytes); closing the connection`;
    const say = this.opts.onStalled ?? ((m: string) => process.stderr.write(m + '\n'));
    say(message);
    this.output.drop();
    this.close();
    // Both directions: the peer is gone, and its input must not keep the process alive.
    this.opts.output.destroy();
    this.opts.input.destroy();
  }

  private channel(): StdioChannel {
    return new StdioChannel(this.write, this.output, this.dispatcher.flow);
  }

  close(): void {
    if (!this.open) return;
    this.listens.closeAll();
    // Answers already written this turn still go (a drained shutdown's last answers).
    this.output.flush();
    this.open = false;
    for (const remove of this.removers) remove();
    this.fanout.close();
    for (const ctl of this.session.inflight.values()) ctl.abort(localError('transport_closed'));
    for (const ctl of this.modernInflight.values()) ctl.abort(localError('transport_closed'));
    this.opts.input.off('data', this.onData);
    this.opts.input.off('end', this.close);
    this.resolveClosed();
  }
}

export function serveStdio(registry: Registry, opts: StdioOptions): StdioServer {
  return new StdioTransport(registry, opts);
}
