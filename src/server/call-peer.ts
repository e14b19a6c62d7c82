/**
 * The transports' side of `CallPeer`: what a running call may send back to the client that made
 * it. Progress and log notifications travel on the request's own stream (HTTP: the POST turned
 * into an event stream; stdio: the output). Requests to the client (sampling, elicitation,
 * roots) are server requests in the 2025 eras, answered by a JSON-RPC response that the session
 * routes back; in 2026-07-28 they are multi-round-trip input: the call ends with an
 * `input_required` result, and the client's retry replays the handler with the answers.
 */
import { localError } from '../errors.js';
import type { CallPeer, LogLevel, PeerRequestOptions } from '../registry/types.js';
import { INPUT_METHODS, InputRound, inputBinding, type RequestChannel } from './channel.js';
import type { FlowLimits } from './flow-limits.js';
import type { RequestStates } from './request-state.js';
import { isPlainObject, serializeNotification } from './jsonrpc.js';
import { NoticeGate, cutText } from './notice-gate.js';
import { LOG_LEVEL_META_KEY } from './protocol.js';
import type { PeerRouter, RequestScope, SessionState } from './session.js';

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

let nextOutgoingId = 1;

export class RequestPeer implements CallPeer {
  private inputSeq = 0;
  /** The call's message bounds, made on its first log or progress message. */
  private gate: NoticeGate | undefined;

  constructor(
    private readonly scope: RequestScope,
    private readonly params: Record<string, unknown>,
    private readonly channel: RequestChannel | undefined,
    /** The request's method (its input round's state is bound to it and the name). */
    private readonly method: string,
    /** Size and rate of the call's log and progress messages (limits.notices). */
    private readonly flow: FlowLimits,
    /** Seals the state of the call's 2026-07-28 input round (request-state.ts). */
    private readonly states: RequestStates,
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
    if (!this.admit()) return false;
    const params: Record<string, unknown> = { progressToken: token, progress };
    if (total !== undefined) params.total = total;
    if (message !== undefined) params.message = message;
    let json = serializeNotification('notifications/progress', params);
    const max = this.flow.noticeBytes;
    if (message !== undefined && json.length > max / 3 && Buffer.byteLength(json) > max) {
      this.flow.refused?.('notice_size');
      params.message = cutText(message, max - 256, max);
      json = serializeNotification('notifications/progress', params);
    }
    return this.channel?.send(json) ?? false;
  }

  log(level: LogLevel, data: unknown, logger?: string): void {
    if (!this.wantsLog(level) || !this.admit()) return;
    this.sendLog(level, data, logger);
  }

  /** 2026-07-28: only when this request asked for a level; 2025: the session's setLevel. */
  private wantsLog(level: LogLevel): boolean {
    const threshold =
      this.scope.era === 'modern'
        ? this.meta()?.[LOG_LEVEL_META_KEY]
        : (this.scope.session?.logLevel ?? 'debug');
    if (typeof threshold !== 'string' || !(threshold in LEVEL_RANK)) return false;
    return LEVEL_RANK[level]! >= LEVEL_RANK[threshold]!;
  }

  private sendLog(level: LogLevel, data: unknown, logger: string | undefined): boolean {
    const params: Record<string, unknown> = { level, data };
    if (logger !== undefined) params.logger = logger;
    let json = serializeNotification('notifications/message', params);
    const max = this.flow.noticeBytes;
    if (json.length > max / 3 && Buffer.byteLength(json) > max) {
      // Too long: the data goes as its cut JSON text (a structured value cannot be cut in place).
      this.flow.refused?.('notice_size');
      params.data = cutText(typeof data === 'string' ? data : JSON.stringify(data), max - 256, max);
      if (logger !== undefined) params.logger = logger.slice(0, 128);
      json = serializeNotification('notifications/message', params);
    }
    return this.channel?.send(json) ?? false;
  }

  /**
   * Takes one message of the call's rate; the client hears once how many were dropped before
   * the next one goes.
   */
  private admit(): boolean {
    const gate = (this.gate ??= new NoticeGate(this.flow));
    if (!gate.admit()) return false;
    const warning = gate.takeWarning();
    if (warning !== undefined && this.wantsLog('warning'))
      this.sendLog('warning', warning, 'moonhub');
    return true;
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
      return Promise.reject(localError('peer_method_invalid', { method }));
    }
    if (!isPlainObject(this.clientCapabilities?.[capability])) {
      return Promise.reject(localError('peer_capability_missing', { capability }));
    }
    if (this.scope.era === 'modern') {
      const key = opts?.key ?? `input_${++this.inputSeq}`;
      if (this.channel === undefined || !INPUT_METHODS.has(this.method)) {
        return Promise.reject(localError('peer_input_method'));
      }
      this.channel.round ??= new InputRound(
        inputBinding(this.method, this.params, this.scope.principal),
        {},
        this.channel,
        this.states,
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
      return Promise.reject(localError('peer_no_session'));
    }
    if (session.peerRouter !== undefined && session.id !== undefined)
      return routedRequest(session.peerRouter, session.id, channel, method, params);
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
        reject(localError('peer_unanswered'));
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
        reject(localError('peer_no_stream'));
      }
    });
  }
}

/**
 * Cluster modes: the request's id names this process, so the client's answer, wherever it lands,
 * comes back here through the router; it waits no longer than the call (the channel's signal).
 */
function routedRequest(
  router: PeerRouter,
  sessionId: string,
  channel: RequestChannel,
  method: string,
  params: Record<string, unknown>,
): Promise<Record<string, unknown>> {
  let opened: ReturnType<PeerRouter['open']>;
  try {
    opened = router.open(sessionId, channel.signal);
  } catch {
    return Promise.reject(localError('peer_unanswered'));
  }
  channel.askedClient = true;
  const json = JSON.stringify({ jsonrpc: '2.0', id: opened.id, method, params });
  if (!channel.send(json)) {
    opened.answer.catch(() => undefined);
    return Promise.reject(localError('peer_no_stream'));
  }
  return opened.answer.then(
    ({ message }) => clientResult(message),
    () => {
      throw localError('peer_unanswered');
    },
  );
}

/** Routes a client's JSON-RPC response to the server request it answers; false if none waits. */
export function settleOutgoing(session: SessionState, msg: Record<string, unknown>): boolean {
  const id = msg.id;
  if (typeof id !== 'string' && typeof id !== 'number') return false;
  const pending = session.outgoing?.get(id);
  if (pending === undefined) {
    // Cluster modes: the request may wait in another process; the router forwards the answer.
    if (session.peerRouter === undefined || session.id === undefined) return false;
    return session.peerRouter.deliver(id, session.id, msg) !== 'unknown';
  }
  session.outgoing!.delete(id);
  try {
    pending.resolve(clientResult(msg));
  } catch (err) {
    pending.reject(err as Error);
  }
  return true;
}

/**
 * The result of a client's answer to a server request, or the error it stands for. An answer
 * whose `result` is not an object (null, a string, missing, or `"error": null` alone) is a
 * malformed answer, not an empty success: the handler would read `{}` and fail on a field it
 * expected, far from the cause.
 */
function clientResult(msg: Record<string, unknown>): Record<string, unknown> {
  const error = msg.error;
  if (isPlainObject(error))
    throw localError('peer_client_error', {
      message: typeof error.message === 'string' ? error.message : 'unknown error',
    });
  if (isPlainObject(msg.result)) return msg.result;
  const result = msg.result;
  const kind = !('result' in msg)
    ? 'missing'
    : result === null
      ? 'null'
      : Array.isArray(result)
        ? 'an array'
        : `a ${typeof result}`;
  throw localError('peer_client_error', {
    message: `its answer has no result object (result: ${kind})`,
  });
}
