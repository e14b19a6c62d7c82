/**
 * The front door: one parsed JSON-RPC message (or batch) plus its transport's facts in, one
 * decision out. The era, the session or scope, and the batch, initialize and envelope rules are
 * decided here, once, for every transport; HTTP and stdio keep only their bytes, streams and
 * status codes. A refusal is a registered wire error (`errors.ts`).
 */
import type { IncomingHttpHeaders } from 'node:http';
import { WireError, wireError } from '../errors.js';
import type { RequestChannel } from './channel.js';
import type { McpDispatcher } from './dispatcher.js';
import { eraOf } from './era.js';
import {
  classifyMessage,
  echoableId,
  isPlainObject,
  serializeWireError,
  type JsonRpcId,
  type JsonRpcNotification,
  type JsonRpcRequest,
} from './jsonrpc.js';
import { observeEnd, observeStart } from './observer.js';
import { BATCH_VERSIONS, PROTOCOL_VERSION_META_KEY } from './protocol.js';
import type { RequestScope, SessionState, TransportName } from './session.js';
import {
  badRequestId,
  clientInfoRefusal,
  nameRefusal,
  resolveLimits,
  type RefusalCounter,
  type ServerLimits,
} from './session-limits.js';

/** What the transport knows about one message besides its body. */
export interface InboundFacts {
  readonly transport: TransportName;
  /** The request's headers (HTTP); undefined where the transport has none (stdio). */
  readonly headers: IncomingHttpHeaders | undefined;
  /** Who is calling (authenticated by the transport), if anyone in particular. */
  readonly principal: string | undefined;
  /** A `notifications/cancelled` for `requestId` arrived (stdio ends its listen streams). */
  cancelled?(requestId: unknown): void;
}

/** Where a transport's 2025 sessions come from, asked by the inbound layer per message. */
export interface SessionSource {
  /** The session an `initialize` starts, or the error refusing one. */
  open(facts: InboundFacts): SessionState | WireError;
  /** The session a 2025 message belongs to, or the error. */
  find(facts: InboundFacts): SessionState | WireError;
}

/** What to do with one inbound message. */
export type Decision =
  /** Refuse it with `error` (HTTP: the error's status). */
  | { kind: 'reject'; error: WireError; id: JsonRpcId | null }
  /** Nothing to answer (a notification or a client's response, already handled). */
  | { kind: 'handled'; scope: RequestScope | undefined }
  /** Dispatch one request. */
  | { kind: 'request'; msg: JsonRpcRequest; scope: RequestScope }
  /** A 2026-07-28 `subscriptions/listen`: the transport opens the stream. */
  | { kind: 'listen'; msg: JsonRpcRequest; scope: RequestScope }
  /** A 2025-03-26 batch: run it with `runBatch`. */
  | { kind: 'batch'; members: readonly unknown[]; scope: RequestScope };

export class Inbound {
  private readonly scopes = new WeakMap<SessionState, RequestScope>();

  readonly limits: ServerLimits;

  constructor(
    readonly dispatcher: McpDispatcher,
    limits?: Partial<ServerLimits>,
    private readonly refused?: RefusalCounter,
  ) {
    this.limits = resolveLimits(limits);
  }

  /** Decides what one parsed body (a message or a batch) is and where it goes. */
  decide(body: unknown, facts: InboundFacts, sessions: SessionSource): Decision {
    if (Array.isArray(body)) return this.decideBatch(body, facts, sessions);
    const kind = classifyMessage(body);
    if (kind === 'invalid')
      return this.reject(facts, body, wireError('invalid_message'), echoableId(body));
    if (kind === 'response') {
      const session = sessions.find(facts);
      if (session instanceof WireError) return this.reject(facts, body, session, null);
      this.dispatcher.handleResponse(body as Record<string, unknown>, session);
      return { kind: 'handled', scope: undefined };
    }
    const msg = body as JsonRpcRequest;
    const isRequest = kind === 'request';
    if (isRequest) {
      const idError = this.idError(msg.id);
      if (idError !== undefined) return this.reject(facts, body, idError, null);
      const tokenError = this.tokenError(msg.params);
      if (tokenError !== undefined) return this.reject(facts, body, tokenError, msg.id);
    }
    const route = eraOf(msg, isRequest, facts.headers);
    if (route.kind === 'reject')
      return this.reject(facts, body, route.error, isRequest ? msg.id : null);
    if (route.kind === 'modern') {
      if (!isRequest) {
        // Stateless: a call is cancelled by closing its connection (HTTP); stdio ends listens.
        if (msg.method === 'notifications/cancelled') facts.cancelled?.(msg.params?.requestId);
        return { kind: 'handled', scope: undefined };
      }
      const scope: RequestScope = {
        era: 'modern',
        protocolVersion: route.version,
        session: undefined,
        clientCapabilities: route.clientCapabilities,
        principal: facts.principal,
        transport: facts.transport,
        headers: facts.headers,
      };
      const limited = this.checked(msg, facts.principal);
      if (limited !== undefined) return this.reject(facts, body, limited, msg.id);
      return { kind: msg.method === 'subscriptions/listen' ? 'listen' : 'request', msg, scope };
    }
    const initialize = isRequest && msg.method === 'initialize';
    if (initialize) {
      const tooBig = clientInfoRefusal(msg.params, this.limits);
      if (tooBig !== undefined) {
        this.refused?.(tooBig.limit);
        return this.reject(facts, body, tooBig.error, msg.id);
      }
    }
    const session = initialize ? sessions.open(facts) : sessions.find(facts);
    if (session instanceof WireError)
      return this.reject(facts, body, session, initialize ? msg.id : null);
    const scope = this.scopeOf(session, facts);
    if (!isRequest) {
      if (msg.method === 'notifications/cancelled') facts.cancelled?.(msg.params?.requestId);
      this.dispatcher.handleNotification(msg as JsonRpcNotification, scope);
      return { kind: 'handled', scope };
    }
    const limited = this.checked(msg, scope.principal);
    if (limited !== undefined) return this.reject(facts, body, limited, msg.id);
    return { kind: 'request', msg, scope };
  }

  /** Dispatches one decided request on its channel. */
  dispatch(decision: { msg: JsonRpcRequest; scope: RequestScope }, channel: RequestChannel) {
    return this.dispatcher.handleRequest(decision.msg, decision.scope, channel);
  }

  /**
   * Runs a decided batch: each member on its own channel (`channelFor`), notifications
   * handled, invalid members answered in place. Undefined when nothing needs an answer.
   */
  runBatch(
    decision: { members: readonly unknown[]; scope: RequestScope },
    channelFor: () => RequestChannel,
  ): Promise<string> | undefined {
    const { members, scope } = decision;
    const pending: Promise<string>[] = [];
    for (const el of members) {
      const kind = classifyMessage(el);
      const idError = kind === 'request' ? this.idError((el as JsonRpcRequest).id) : undefined;
      const tokenError =
        kind === 'request' && idError === undefined
          ? this.tokenError((el as JsonRpcRequest).params)
          : undefined;
      if (idError !== undefined) pending.push(Promise.resolve(serializeWireError(null, idError)));
      else if (tokenError !== undefined)
        pending.push(Promise.resolve(serializeWireError((el as JsonRpcRequest).id, tokenError)));
      else if (kind === 'request') {
        const limited = this.checked(el as JsonRpcRequest, scope.principal);
        pending.push(
          limited === undefined
            ? this.dispatcher.handleRequest(el as JsonRpcRequest, scope, channelFor())
            : Promise.resolve(serializeWireError((el as JsonRpcRequest).id, limited)),
        );
      } else if (kind === 'notification')
        this.dispatcher.handleNotification(el as JsonRpcNotification, scope);
      // 2025-03-26 lets a batch carry the client's answers to server requests.
      else if (kind === 'response' && scope.session !== undefined)
        this.dispatcher.handleResponse(el as Record<string, unknown>, scope.session);
      else if (kind === 'invalid')
        pending.push(
          Promise.resolve(serializeWireError(echoableId(el), wireError('batch_member_invalid'))),
        );
    }
    if (pending.length === 0) return undefined;
    return Promise.all(pending).then((outs) => '[' + outs.join(',') + ']');
  }

  /** The name bound (limits.name_length), then the rate limits: a request's refusal, or undefined. */
  private checked(msg: JsonRpcRequest, principal: string | undefined): WireError | undefined {
    const tooLong = nameRefusal(msg.method, msg.params, this.limits);
    if (tooLong !== undefined) {
      this.refused?.('name_length');
      return tooLong;
    }
    return this.limited(msg, principal);
  }

  /**
   * The rate limits (limits.rate): the refusal of one request, or undefined. With no limit
   * configured this is one field check, no allocation, on every request.
   */
  private limited(msg: JsonRpcRequest, principal: string | undefined): WireError | undefined {
    const flow = this.dispatcher.flow;
    if (flow.rate === undefined) return undefined;
    const name = msg.method === 'tools/call' ? msg.params?.name : undefined;
    const refusal = flow.takeRate(principal, typeof name === 'string' ? name : undefined);
    if (refusal === undefined) return undefined;
    const { limit, retryAfterMs } = refusal;
    return wireError('rate_limited', { limit, retryAfterMs }, { limit, retryAfterMs });
  }

  /** The 2025 scope of a session, made once per session and kept current. */
  scopeOf(session: SessionState, facts: InboundFacts): RequestScope {
    let scope = this.scopes.get(session);
    if (scope === undefined) {
      scope = {
        era: 'legacy',
        protocolVersion: session.protocolVersion,
        session,
        principal: session.principal,
        transport: facts.transport,
      };
      this.scopes.set(session, scope);
    }
    scope.protocolVersion = session.protocolVersion;
    return scope;
  }

  /** The batch rules, the same on every transport. */
  private decideBatch(batch: unknown[], facts: InboundFacts, sessions: SessionSource): Decision {
    if (batch.length === 0) return this.reject(facts, batch, wireError('batch_empty'), null);
    const max = this.limits.batchLength;
    if (batch.length > max) {
      this.refused?.('batch_length');
      const error = wireError('batch_too_long', { max, length: batch.length });
      return this.reject(facts, batch, error, null);
    }
    for (const el of batch) {
      if (!isPlainObject(el)) continue;
      const params = el.params;
      if (
        isPlainObject(params) &&
        isPlainObject(params._meta) &&
        PROTOCOL_VERSION_META_KEY in params._meta
      )
        return this.reject(facts, batch, wireError('batch_modern'), null);
      if (el.method === 'initialize')
        return this.reject(facts, batch, wireError('batch_initialize'), null);
    }
    const session = sessions.find(facts);
    if (session instanceof WireError) return this.reject(facts, batch, session, null);
    if (!BATCH_VERSIONS.has(session.protocolVersion))
      return this.reject(
        facts,
        batch,
        wireError('batch_unsupported', { version: session.protocolVersion }),
        null,
      );
    return { kind: 'batch', members: batch, scope: this.scopeOf(session, facts) };
  }

  /** The refusal of a request id past the bounds (counted), or undefined. */
  private idError(id: JsonRpcId): WireError | undefined {
    const reason = badRequestId(id, this.limits.requestIdLength);
    if (reason === undefined) return undefined;
    this.refused?.('request_id');
    return wireError('request_id_invalid', { reason });
  }

  /**
   * The refusal of a string progress token longer than a request id may be (counted), or
   * undefined. Every progress notification of the call echoes the token, so an unbounded one
   * made each of them as large as the request (past `limits.notices.message_bytes`, which cuts
   * only the message), up to 200 a second serialised on the hub's thread. Tokens of other
   * types are let through: a number is short, and anything else never gets progress.
   */
  private tokenError(params: Record<string, unknown> | undefined): WireError | undefined {
    const meta = params?._meta;
    if (!isPlainObject(meta)) return undefined;
    const token = meta.progressToken;
    const max = this.limits.requestIdLength;
    if (typeof token !== 'string' || token.length <= max) return undefined;
    this.refused?.('progress_token');
    return wireError('progress_token_invalid', {
      reason: `is longer than ${max} characters (limits.request_id_length)`,
    });
  }

  /** A refusal, told to the observer too. */
  private reject(
    facts: InboundFacts,
    body: unknown,
    error: WireError,
    id: JsonRpcId | null,
  ): Decision {
    const observer = this.dispatcher.observer;
    if (observer !== undefined) {
      const method =
        isPlainObject(body) && typeof body.method === 'string'
          ? body.method
          : Array.isArray(body)
            ? '(batch)'
            : '(invalid)';
      const params = isPlainObject(body) && isPlainObject(body.params) ? body.params : undefined;
      const call = observeStart(
        observer,
        undefined,
        facts.transport,
        facts.principal,
        id,
        method,
        params,
      );
      observeEnd(observer, call, 'rejected', error.code);
    }
    return { kind: 'reject', error, id };
  }
}
