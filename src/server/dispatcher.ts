/**
 * The transport-independent MCP dispatcher: one object per server (not per request or session)
 * that answers a parsed JSON-RPC request from the registry and returns the serialised response.
 * Transports decide the era and the session; the dispatcher only reads them from the scope.
 */
import { observeCalls, type CallEvent } from './call-observer.js';
import { RegistryError } from '../registry/errors.js';
import type { Abortable } from './abort.js';
import {
  RequestChannel,
  INPUT_METHODS,
  RequestPeer,
  inputBinding,
  resumeRound,
  settleOutgoing,
  type OutgoingRequest,
} from './call-peer.js';
import type { Registry } from '../registry/registry.js';
import type { CallContext, OwnerFilter } from '../registry/types.js';
import {
  INTERNAL_ERROR,
  INVALID_PARAMS,
  METHOD_NOT_FOUND,
  MISSING_CLIENT_CAPABILITY,
  RESOURCE_NOT_FOUND,
  RpcError,
  isPlainObject,
  serializeError,
  serializeResult,
  type JsonRpcId,
  type JsonRpcNotification,
  type JsonRpcRequest,
} from './jsonrpc.js';
import { DEFAULT_PAGE_SIZE, paginate } from './pagination.js';
import {
  CACHEABLE_METHODS,
  LATEST_LEGACY_VERSION,
  LEGACY_PROTOCOL_VERSIONS,
  LOG_LEVELS,
  MODERN_METHODS,
  MODERN_PROTOCOL_VERSIONS,
  SERVER_INFO_META_KEY,
  packageVersion,
  type Implementation,
} from './protocol.js';

/** What a 2025-era session remembers between requests (HTTP session or the one stdio peer). */
export interface SessionState {
  /** The `Mcp-Session-Id`; undefined for stdio. */
  readonly id: string | undefined;
  protocolVersion: string;
  initialized: boolean;
  logLevel: string | undefined;
  clientInfo: unknown;
  clientCapabilities: Record<string, unknown> | undefined;
  /** Who the session acts for, once auth exists; feeds `DispatcherOptions.filterFor`. */
  principal: string | undefined;
  /** Requests still running, so `notifications/cancelled` can abort them. */
  readonly inflight: Map<JsonRpcId, Abortable>;
  /** Requests this server sent the client (sampling, elicitation), made at the first one. */
  outgoing?: Map<JsonRpcId, OutgoingRequest>;
  /** Resource URIs the client subscribed to, made at the first subscription. */
  subscriptions?: Set<string>;
}

export function newSessionState(
  id: string | undefined,
  protocolVersion = LATEST_LEGACY_VERSION,
): SessionState {
  return {
    id,
    protocolVersion,
    initialized: false,
    logLevel: undefined,
    clientInfo: undefined,
    clientCapabilities: undefined,
    principal: undefined,
    inflight: new Map(),
  };
}

/** How one request arrived: its era, and the session (2025) or envelope (2026) it carries. */
export interface RequestScope {
  era: 'legacy' | 'modern';
  protocolVersion: string;
  session: SessionState | undefined;
  /** 2026-07-28: the capabilities the request's envelope declares. */
  clientCapabilities?: Record<string, unknown> | undefined;
  principal?: string | undefined;
}

export interface DispatcherOptions {
  /** Items per page of the list methods (default 100). */
  pageSize?: number;
  serverInfo?: Implementation;
  instructions?: string;
  /**
   * Per-principal view hook: which owners this request may see. Default: everything. Called
   * once per list/call/get/read request; cache inside it (e.g. per principal and registry version).
   */
  filterFor?: (scope: RequestScope) => OwnerFilter;
  /**
   * Identity hook: fills who the caller is (session_uuid, agent_name, target) into a call's
   * context, after the dispatcher has set hub_id, request_id, principal and filter.
   */
  contextFor?: (scope: RequestScope, ctx: CallContext) => void;
  /** Internal errors (handler bugs); never written to stdout. */
  onError?: (err: unknown) => void;
  /** Per-call hook (`moonhub dev`'s log line; issue 15): see call-observer.ts. */
  onCall?: (e: CallEvent) => void;
}

export { LazyAbort, type Abortable } from './abort.js';
export type { CallEvent } from './call-observer.js';

export interface McpDispatcher {
  readonly registry: Registry;
  readonly serverInfo: Implementation;
  readonly capabilities: Record<string, unknown>;
  /** Answers one request; never throws. `abort` backs the handler's CallContext.signal. */
  handleRequest(msg: JsonRpcRequest, scope: RequestScope, abort?: Abortable): Promise<string>;
  /** Handles one notification (initialized, cancelled); never throws. */
  handleNotification(msg: JsonRpcNotification, scope: RequestScope): void;
  /** Routes a client's response to the server request it answers; false if none waits. */
  handleResponse(msg: Record<string, unknown>, session: SessionState): boolean;
}

type MethodHandler = (
  params: Record<string, unknown>,
  scope: RequestScope,
  id: JsonRpcId,
  abort: Abortable | undefined,
) => unknown;

export function createMcpDispatcher(
  registry: Registry,
  opts: DispatcherOptions = {},
): McpDispatcher {
  const pageSize =
    opts.pageSize && opts.pageSize > 0 ? Math.floor(opts.pageSize) : DEFAULT_PAGE_SIZE;
  const serverInfo: Implementation = opts.serverInfo ?? {
    name: 'moonhub',
    version: packageVersion(),
  };
  const capabilities: Record<string, unknown> = {
    tools: { listChanged: true },
    prompts: { listChanged: true },
    resources: { subscribe: true, listChanged: true },
    logging: {},
    completions: {},
  };
  const filterFor = opts.filterFor;
  const contextFor = opts.contextFor;
  const onError = opts.onError;
  const hubId = registry.hubId;
  const serverInfoMeta = { [SERVER_INFO_META_KEY]: serverInfo };
  const modernSuffix = '"resultType":"complete","_meta":' + JSON.stringify(serverInfoMeta);

  function ctxFor(
    scope: RequestScope,
    id: JsonRpcId,
    abort: Abortable | undefined,
    params: Record<string, unknown>,
    method: string,
  ): CallContext {
    // Own getters (not prototype ones) so `{ ...ctx }` copies them too; the peer is made only
    // when a handler talks back to its client.
    let peer: RequestPeer | undefined;
    const channel = abort instanceof RequestChannel ? abort : undefined;
    const ctx: CallContext =
      abort === undefined
        ? {
            hub_id: hubId,
            request_id: id,
            get peer() {
              return (peer ??= new RequestPeer(scope, params, channel, method));
            },
          }
        : {
            hub_id: hubId,
            request_id: id,
            get signal() {
              return abort.signal;
            },
            get peer() {
              return (peer ??= new RequestPeer(scope, params, channel, method));
            },
          };
    const session = scope.session;
    if (session?.id !== undefined) ctx.session_uuid = session.id;
    const principal = scope.principal ?? session?.principal;
    if (principal !== undefined) ctx.principal = principal;
    const filter = filterFor?.(scope);
    if (filter !== undefined) ctx.filter = filter;
    contextFor?.(scope, ctx);
    return ctx;
  }

  const methods: Record<string, MethodHandler> = {
    initialize(params, scope) {
      const session = scope.session;
      const requested =
        typeof params.protocolVersion === 'string' ? params.protocolVersion : undefined;
      const version =
        requested !== undefined && LEGACY_PROTOCOL_VERSIONS.includes(requested)
          ? requested
          : LATEST_LEGACY_VERSION;
      if (session) {
        session.protocolVersion = version;
        session.clientInfo = params.clientInfo;
        session.clientCapabilities = isPlainObject(params.capabilities)
          ? params.capabilities
          : undefined;
      }
      const result: Record<string, unknown> = {
        protocolVersion: version,
        capabilities,
        serverInfo,
      };
      if (opts.instructions !== undefined) result.instructions = opts.instructions;
      return result;
    },

    ping() {
      return {};
    },

    'server/discover'() {
      const result: Record<string, unknown> = {
        supportedVersions: MODERN_PROTOCOL_VERSIONS,
        capabilities,
      };
      if (opts.instructions !== undefined) result.instructions = opts.instructions;
      return result;
    },

    'tools/list'(params, scope) {
      const page = paginate(
        registry.listTools(filterFor?.(scope)),
        nameOf,
        params.cursor,
        pageSize,
      );
      return page.nextCursor === undefined
        ? { tools: page.items }
        : { tools: page.items, nextCursor: page.nextCursor };
    },

    'tools/call'(params, scope, id, abort) {
      const name = params.name;
      if (typeof name !== 'string')
        throw new RpcError(INVALID_PARAMS, 'tools/call needs a string "name"');
      const args = params.arguments;
      if (args !== undefined && args !== null && !isPlainObject(args)) {
        throw new RpcError(INVALID_PARAMS, 'tools/call "arguments" must be an object');
      }
      const filter = filterFor?.(scope);
      const needs = registry.getTool(name, filter)?.requiredCapabilities;
      if (needs !== undefined) {
        const missing = missingCapabilities(needs, scope);
        if (missing !== undefined) {
          const message = `Missing required client capability: ${Object.keys(missing).join(', ')}`;
          if (scope.era === 'modern')
            throw new RpcError(MISSING_CLIENT_CAPABILITY, message, {
              requiredCapabilities: missing,
            });
          return {
            content: [{ type: 'text', text: `${message} (tool '${name}' needs it)` }],
            isError: true,
          };
        }
      }
      return registry.callTool(
        name,
        args ?? undefined,
        ctxFor(scope, id, abort, params, 'tools/call'),
        filter,
      );
    },

    'prompts/list'(params, scope) {
      const page = paginate(
        registry.listPrompts(filterFor?.(scope)),
        nameOf,
        params.cursor,
        pageSize,
      );
      return page.nextCursor === undefined
        ? { prompts: page.items }
        : { prompts: page.items, nextCursor: page.nextCursor };
    },

    'prompts/get'(params, scope, id, abort) {
      const name = params.name;
      if (typeof name !== 'string')
        throw new RpcError(INVALID_PARAMS, 'prompts/get needs a string "name"');
      const args = params.arguments;
      if (args !== undefined && args !== null && !isPlainObject(args)) {
        throw new RpcError(INVALID_PARAMS, 'prompts/get "arguments" must be an object');
      }
      return registry.getPrompt(
        name,
        (args ?? undefined) as Record<string, string> | undefined,
        ctxFor(scope, id, abort, params, 'prompts/get'),
        filterFor?.(scope),
      );
    },

    'resources/list'(params, scope) {
      const page = paginate(
        registry.listResources(filterFor?.(scope)),
        uriOf,
        params.cursor,
        pageSize,
      );
      return page.nextCursor === undefined
        ? { resources: page.items }
        : { resources: page.items, nextCursor: page.nextCursor };
    },

    'resources/templates/list'(params, scope) {
      const list = registry.listResourceTemplates(filterFor?.(scope));
      const page = paginate(list, templateOf, params.cursor, pageSize);
      return page.nextCursor === undefined
        ? { resourceTemplates: page.items }
        : { resourceTemplates: page.items, nextCursor: page.nextCursor };
    },

    'resources/read'(params, scope, id, abort) {
      const uri = params.uri;
      if (typeof uri !== 'string')
        throw new RpcError(INVALID_PARAMS, 'resources/read needs a string "uri"');
      return registry.readResource(
        uri,
        ctxFor(scope, id, abort, params, 'resources/read'),
        filterFor?.(scope),
      );
    },

    'resources/subscribe'(params, scope) {
      const uri = params.uri;
      if (typeof uri !== 'string')
        throw new RpcError(INVALID_PARAMS, 'resources/subscribe needs a string "uri"');
      if (scope.session) (scope.session.subscriptions ??= new Set()).add(uri);
      return {};
    },

    'resources/unsubscribe'(params, scope) {
      const uri = params.uri;
      if (typeof uri !== 'string')
        throw new RpcError(INVALID_PARAMS, 'resources/unsubscribe needs a string "uri"');
      scope.session?.subscriptions?.delete(uri);
      return {};
    },

    'logging/setLevel'(params, scope) {
      const level = params.level;
      if (typeof level !== 'string' || !LOG_LEVELS.has(level)) {
        throw new RpcError(INVALID_PARAMS, `Invalid log level: ${String(level)}`);
      }
      if (scope.session) scope.session.logLevel = level;
      return {};
    },

    async 'completion/complete'(params, scope, id, abort) {
      const ref = params.ref;
      const argument = params.argument;
      if (
        !isPlainObject(ref) ||
        !isPlainObject(argument) ||
        typeof ref.type !== 'string' ||
        typeof argument.name !== 'string'
      ) {
        throw new RpcError(
          INVALID_PARAMS,
          'completion/complete needs "ref" and "argument" objects',
        );
      }
      const given = isPlainObject(params.context) ? params.context.arguments : undefined;
      const context: Record<string, string> = {};
      if (isPlainObject(given)) {
        for (const [k, v] of Object.entries(given)) if (typeof v === 'string') context[k] = v;
      }
      const completion = await registry.complete(
        ref as { type: string; name?: string; uri?: string },
        argument.name,
        typeof argument.value === 'string' ? argument.value : '',
        context,
        ctxFor(scope, id, abort, params, 'completion/complete'),
        filterFor?.(scope),
      );
      return { completion };
    },
  };

  /** Methods a 2025-era peer may call (everything but the 2026-only ones). */
  const legacyAllowed = (m: string): boolean =>
    m !== 'server/discover' && m !== 'subscriptions/listen';

  /** Shapes a 2026-07-28 result: `resultType`, cache hints where required, serverInfo in `_meta`. */
  function modernResult(method: string, result: Record<string, unknown>): Record<string, unknown> {
    const meta = result._meta;
    const out: Record<string, unknown> = {
      ...result,
      resultType: typeof result.resultType === 'string' ? result.resultType : 'complete',
      _meta: isPlainObject(meta) ? { ...meta, ...serverInfoMeta } : serverInfoMeta,
    };
    if (CACHEABLE_METHODS.has(method)) {
      // ttlMs 0: entries change whenever plugins reload, so clients must not serve stale lists.
      if (out.ttlMs === undefined) out.ttlMs = 0;
      if (out.cacheScope === undefined) out.cacheScope = 'private';
    }
    return out;
  }

  function errorFor(
    id: JsonRpcId,
    err: unknown,
    scope: RequestScope,
    abort: Abortable | undefined,
  ): string {
    if (err instanceof RpcError) {
      if (abort instanceof RequestChannel) abort.errorCode = err.code;
      return serializeError(id, err.code, err.message, err.data);
    }
    if (err instanceof RegistryError) {
      switch (err.code) {
        case 'unknown_tool':
        case 'unknown_prompt':
        case 'invalid_arguments':
          return serializeError(id, INVALID_PARAMS, err.message);
        case 'unknown_resource': {
          const uri = err.message.replace(/^Resource not found: /, '');
          // 2026-07-28 made a missing resource -32602; 2025 revisions use -32002.
          const code = scope.era === 'modern' ? INVALID_PARAMS : RESOURCE_NOT_FOUND;
          return serializeError(id, code, err.message, { uri });
        }
        default:
          break;
      }
    }
    onError?.(err);
    return serializeError(id, INTERNAL_ERROR, 'Internal error');
  }

  async function handleRequest(
    msg: JsonRpcRequest,
    scope: RequestScope,
    abort?: Abortable,
  ): Promise<string> {
    const id = msg.id;
    const method = msg.method;
    const handler = Object.hasOwn(methods, method) ? methods[method] : undefined;
    if (
      handler === undefined ||
      (scope.era === 'modern' ? !MODERN_METHODS.has(method) : !legacyAllowed(method))
    ) {
      if (abort instanceof RequestChannel) abort.errorCode = METHOD_NOT_FOUND;
      return serializeError(id, METHOD_NOT_FOUND, `Method not found: ${method}`);
    }
    const session = scope.session;
    if (abort && session) session.inflight.set(id, abort);
    try {
      const params = msg.params ?? EMPTY;
      if (
        scope.era === 'modern' &&
        (params.inputResponses !== undefined || params.requestState !== undefined) &&
        abort instanceof RequestChannel &&
        INPUT_METHODS.has(method)
      ) {
        abort.round = resumeRound(params, inputBinding(method, params), abort);
      }
      let result = handler(params, scope, id, abort);
      if (result instanceof Promise) result = await result;
      if (!isPlainObject(result)) throw new Error(`${method} handler returned a non-object result`);
      if (scope.era !== 'modern') return serializeResult(id, result);
      const asked = abort instanceof RequestChannel ? abort.round?.result : undefined;
      if (asked !== undefined) return serializeResult(id, modernResult(method, asked));
      if (
        result._meta === undefined &&
        result.resultType === undefined &&
        !CACHEABLE_METHODS.has(method)
      ) {
        // Hot path (tools/call, prompts/get): splice the constant 2026 fields into the JSON
        // instead of copying the result object.
        const inner = JSON.stringify(result);
        if (inner.charCodeAt(0) === 123 && inner.charCodeAt(inner.length - 1) === 125) {
          return (
            '{"jsonrpc":"2.0","id":' +
            JSON.stringify(id) +
            ',"result":' +
            (inner === '{}' ? '{' : inner.slice(0, -1) + ',') +
            modernSuffix +
            '}}'
          );
        }
      }
      return serializeResult(id, modernResult(method, result));
    } catch (err) {
      // A handler stopped because its input round ended (prompts/get, resources/read throw).
      const asked = abort instanceof RequestChannel ? abort.round?.result : undefined;
      if (asked !== undefined && scope.era === 'modern')
        return serializeResult(id, modernResult(method, asked));
      return errorFor(id, err, scope, abort);
    } finally {
      if (abort && session && session.inflight.get(id) === abort) session.inflight.delete(id);
      // Server requests the client never answered must not outlive the call (they wait on it).
      if (abort instanceof RequestChannel && abort.askedClient)
        abort.abort(new Error('call ended'));
    }
  }

  function handleNotification(msg: JsonRpcNotification, scope: RequestScope): void {
    const session = scope.session;
    switch (msg.method) {
      case 'notifications/initialized':
        if (session) session.initialized = true;
        return;
      case 'notifications/cancelled': {
        const requestId = msg.params?.requestId;
        if (session && (typeof requestId === 'string' || typeof requestId === 'number')) {
          const ctl = session.inflight.get(requestId);
          if (ctl) {
            session.inflight.delete(requestId);
            ctl.abort(
              new Error(typeof msg.params?.reason === 'string' ? msg.params.reason : 'cancelled'),
            );
          }
        }
        return;
      }
      default:
        // Unknown notifications are ignored, as JSON-RPC asks.
        return;
    }
  }

  function handleResponse(msg: Record<string, unknown>, session: SessionState): boolean {
    return settleOutgoing(session, msg);
  }

  return {
    registry,
    serverInfo,
    capabilities,
    // The per-call hook (issue 15), wrapped in only when one is given.
    handleRequest:
      opts.onCall === undefined
        ? handleRequest
        : observeCalls(
            handleRequest,
            opts.onCall,
            (scope) => scope.principal ?? scope.session?.principal,
          ),
    handleNotification,
    handleResponse,
  };
}

/** The capabilities in `needs` the caller did not declare, as a ClientCapabilities object. */
function missingCapabilities(
  needs: string[],
  scope: RequestScope,
): Record<string, object> | undefined {
  const declared =
    scope.era === 'modern' ? scope.clientCapabilities : scope.session?.clientCapabilities;
  let missing: Record<string, object> | undefined;
  for (const name of needs) {
    if (!isPlainObject(declared?.[name])) (missing ??= {})[name] = {};
  }
  return missing;
}

const EMPTY: Record<string, unknown> = Object.freeze({}) as Record<string, unknown>;
const nameOf = (x: { name: string }): string => x.name;
const uriOf = (x: { uri: string }): string => x.uri;
const templateOf = (x: { uriTemplate: string }): string => x.uriTemplate;
