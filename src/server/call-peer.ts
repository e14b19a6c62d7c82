/**
 * The transports' side of `CallPeer`: what a running call may send back to the client that made
 * it. Progress and log notifications travel on the request's own stream (HTTP: the POST turned
 * into an event stream; stdio: the output). Requests to the client (sampling, elicitation,
 * roots) are server requests in the 2025 eras, answered by a JSON-RPC response that the session
 * routes back; in 2026-07-28 they are multi-round-trip input: the call ends with an
 * `input_required` result, and the client's retry replays the handler with the answers.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { CallPeer, LogLevel, PeerRequestOptions } from '../registry/types.js';
import { LazyAbort } from './abort.js';
import type { RequestScope, SessionState } from './dispatcher.js';
import { INVALID_PARAMS, RpcError, isPlainObject, serializeNotification } from './jsonrpc.js';
import { LOG_LEVEL_META_KEY } from './protocol.js';

/**
 * One request as its transport carries it: its abort signal, where messages to the client go
 * while it runs, and what the dispatcher learns about how to answer it.
 */
export class RequestChannel extends LazyAbort {
  /** 2026-07-28: the input round of this request, once it has one. */
  round: InputRound | undefined = undefined;
  /** The JSON-RPC error code the answer carries, for transports that map it to a status. */
  errorCode: number | undefined = undefined;
  /** A 2025 server request went out: when the call ends, unanswered ones are dropped. */
  askedClient = false;

  /** Writes one serialised message on this request's stream; false when it has none. */
  send(_json: string): boolean {
    return false;
  }

  /** Lets go of the client's connection until it reconnects; false when it cannot resume. */
  pollLater(_retryMs: number): boolean {
    return false;
  }
}

const LEVEL_RANK: Readonly<Record<string, number>> = {
  debug: 0,
  info: 1,
  notice: 2,
  warning: 3,
  error: 4,
  critical: 5,
  alert: 6,
  emergency: 7,
};

/** The client capability each client-bound method needs. */
const CAPABILITY_OF: Readonly<Record<string, string>> = {
  'elicitation/create': 'elicitation',
  'sampling/createMessage': 'sampling',
  'roots/list': 'roots',
};

/** A 2025-era request the server sent and the client has not answered yet. */
export interface OutgoingRequest {
  resolve(result: Record<string, unknown>): void;
  reject(err: Error): void;
}

let nextOutgoingId = 1;

export class RequestPeer implements CallPeer {
  private inputSeq = 0;

  constructor(
    private readonly scope: RequestScope,
    private readonly params: Record<string, unknown>,
    private readonly channel: RequestChannel | undefined,
    /** The request's method (its input round's state is bound to it and the name). */
    private readonly method: string,
  ) {}

  get clientCapabilities(): Record<string, unknown> | undefined {
    return this.scope.era === 'modern'
      ? this.scope.clientCapabilities
      : this.scope.session?.clientCapabilities;
  }

  private meta(): Record<string, unknown> | undefined {
    const meta = this.params._meta;
    return isPlainObject(meta) ? meta : undefined;
  }

  progress(progress: number, total?: number, message?: string): boolean {
    const token = this.meta()?.progressToken;
    if (typeof token !== 'string' && typeof token !== 'number') return false;
    const params: Record<string, unknown> = { progressToken: token, progress };
    if (total !== undefined) params.total = total;
    if (message !== undefined) params.message = message;
    return this.channel?.send(serializeNotification('notifications/progress', params)) ?? false;
  }

  log(level: LogLevel, data: unknown, logger?: string): void {
    // 2026-07-28: only when this request asked for a level; 2025: the session's setLevel.
    const threshold =
      this.scope.era === 'modern'
        ? this.meta()?.[LOG_LEVEL_META_KEY]
        : (this.scope.session?.logLevel ?? 'debug');
    if (typeof threshold !== 'string' || !(threshold in LEVEL_RANK)) return;
    if (LEVEL_RANK[level]! < LEVEL_RANK[threshold]!) return;
    const params: Record<string, unknown> = { level, data };
    if (logger !== undefined) params.logger = logger;
    this.channel?.send(serializeNotification('notifications/message', params));
  }

  pollLater(retryMs: number): boolean {
    return this.channel?.pollLater(retryMs) ?? false;
  }

  request(
    method: string,
    params: Record<string, unknown>,
    opts?: PeerRequestOptions,
  ): Promise<Record<string, unknown>> {
    const capability = CAPABILITY_OF[method];
    if (capability === undefined) {
      return Promise.reject(new Error(`${method} is not a request a server may send`));
    }
    if (!isPlainObject(this.clientCapabilities?.[capability])) {
      return Promise.reject(
        new Error(`the client did not declare the '${capability}' capability, so it cannot answer`),
      );
    }
    if (this.scope.era === 'modern') {
      const key = opts?.key ?? `input_${++this.inputSeq}`;
      if (this.channel === undefined || !INPUT_METHODS.has(this.method)) {
        return Promise.reject(
          new Error('only tools/call, prompts/get and resources/read may ask the client for input'),
        );
      }
      this.channel.round ??= new InputRound(
        inputBinding(this.method, this.params),
        {},
        this.channel,
      );
      return this.channel.round.ask(key, method, params);
    }
    return this.legacyRequest(method, params);
  }

  private legacyRequest(
    method: string,
    params: Record<string, unknown>,
  ): Promise<Record<string, unknown>> {
    const session = this.scope.session;
    const channel = this.channel;
    if (session === undefined || channel === undefined) {
      return Promise.reject(new Error('this request has no session to carry a server request'));
    }
    const id = `moonhub-${nextOutgoingId++}`;
    channel.askedClient = true;
    const json =
      '{"jsonrpc":"2.0","id":' +
      JSON.stringify(id) +
      ',"method":' +
      JSON.stringify(method) +
      ',"params":' +
      JSON.stringify(params) +
      '}';
    return new Promise<Record<string, unknown>>((resolve, reject) => {
      const outgoing = (session.outgoing ??= new Map());
      const signal = channel.signal;
      const onAbort = (): void => {
        outgoing.delete(id);
        reject(new Error('the call ended before the client answered'));
      };
      outgoing.set(id, {
        resolve: (result: Record<string, unknown>) => {
          signal.removeEventListener('abort', onAbort);
          resolve(result);
        },
        reject: (err: Error) => {
          signal.removeEventListener('abort', onAbort);
          reject(err);
        },
      });
      if (signal.aborted) return onAbort();
      signal.addEventListener('abort', onAbort, { once: true });
      if (!channel.send(json)) {
        outgoing.delete(id);
        signal.removeEventListener('abort', onAbort);
        reject(
          new Error(
            'the client cannot receive requests during this call (its request accepts no event stream)',
          ),
        );
      }
    });
  }
}

/** Routes a client's JSON-RPC response to the server request it answers; false if none waits. */
export function settleOutgoing(session: SessionState, msg: Record<string, unknown>): boolean {
  const id = msg.id;
  if (typeof id !== 'string' && typeof id !== 'number') return false;
  const pending = session.outgoing?.get(id);
  if (pending === undefined) return false;
  session.outgoing!.delete(id);
  const error = msg.error;
  if (isPlainObject(error)) {
    pending.reject(
      new Error(
        `the client answered with an error: ${typeof error.message === 'string' ? error.message : 'unknown error'}`,
      ),
    );
  } else {
    pending.resolve(isPlainObject(msg.result) ? msg.result : {});
  }
  return true;
}

// ---- 2026-07-28 multi-round-trip input ------------------------------------------------------

/** Methods whose results may be `input_required` (SEP-2322). */
export const INPUT_METHODS: ReadonlySet<string> = new Set([
  'tools/call',
  'prompts/get',
  'resources/read',
]);

/** What a request state is bound to: the method and the tool, prompt or resource it names. */
export function inputBinding(method: string, params: Record<string, unknown>): string {
  return method + ' ' + String(method === 'resources/read' ? params.uri : params.name);
}

/** Signs request states; a restart makes old states fail their check, as they should. */
const STATE_KEY = randomBytes(32);

function sign(payload: string): string {
  return createHmac('sha256', STATE_KEY).update(payload).digest('base64url');
}

/**
 * One request's input round: the answers it already has (from `inputResponses` and the signed
 * `requestState` of earlier rounds) and the questions still open. The first open question ends
 * the round on the next turn of the event loop, so questions asked together go out together.
 */
export class InputRound {
  private readonly used: Record<string, unknown> = {};
  private missing: Record<string, { method: string; params: Record<string, unknown> }> | undefined;
  private readonly waiting: ((err: Error) => void)[] = [];
  /** The `input_required` result, once the round has ended. */
  result: Record<string, unknown> | undefined = undefined;

  constructor(
    private readonly binding: string,
    private readonly known: Record<string, unknown>,
    private readonly channel: RequestChannel,
  ) {}

  ask(
    key: string,
    method: string,
    params: Record<string, unknown>,
  ): Promise<Record<string, unknown>> {
    const answer = Object.hasOwn(this.known, key) ? this.known[key] : undefined;
    if (answer !== undefined) {
      this.used[key] = answer;
      return Promise.resolve(answer as Record<string, unknown>);
    }
    if (this.missing === undefined) {
      this.missing = {};
      setImmediate(() => this.end());
    }
    this.missing[key] = { method, params };
    return new Promise((_, reject) => this.waiting.push(reject));
  }

  private end(): void {
    if (this.channel.signal.aborted) return;
    const payload = Buffer.from(JSON.stringify({ b: this.binding, a: this.used })).toString(
      'base64url',
    );
    this.result = {
      resultType: 'input_required',
      inputRequests: this.missing,
      requestState: payload + '.' + sign(payload),
    };
    // Stop the handler where it waits; its answer is replaced by this result.
    this.channel.abort(new Error('the client must answer input requests first'));
    const err = new Error('the client must answer input requests first');
    for (const reject of this.waiting) reject(err);
  }
}

/**
 * Reads `inputResponses` and `requestState` of a 2026-07-28 retry into a round, or throws the
 * -32602 error a malformed, tampered or misdirected one deserves.
 */
export function resumeRound(
  params: Record<string, unknown>,
  binding: string,
  channel: RequestChannel,
): InputRound {
  const known: Record<string, unknown> = {};
  const state = params.requestState;
  if (state !== undefined) {
    if (typeof state !== 'string')
      throw new RpcError(INVALID_PARAMS, 'requestState must be a string');
    const dot = state.lastIndexOf('.');
    const payload = dot > 0 ? state.slice(0, dot) : '';
    const mac = Buffer.from(dot > 0 ? state.slice(dot + 1) : '');
    const expected = Buffer.from(sign(payload));
    if (mac.length !== expected.length || !timingSafeEqual(mac, expected)) {
      throw new RpcError(INVALID_PARAMS, 'requestState failed its integrity check');
    }
    const decoded = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as {
      b: string;
      a: Record<string, unknown>;
    };
    if (decoded.b !== binding) {
      throw new RpcError(INVALID_PARAMS, 'requestState belongs to another request');
    }
    Object.assign(known, decoded.a);
  }
  const responses = params.inputResponses;
  if (responses !== undefined) {
    if (!isPlainObject(responses)) {
      throw new RpcError(INVALID_PARAMS, 'inputResponses must be an object');
    }
    for (const [key, value] of Object.entries(responses)) {
      if (!isPlainObject(value)) {
        throw new RpcError(
          INVALID_PARAMS,
          `inputResponses.${key} must be an object (the client's result for that input request)`,
        );
      }
      known[key] = value;
    }
  }
  return new InputRound(binding, known, channel);
}
