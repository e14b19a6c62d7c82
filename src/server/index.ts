/** The public face of src/server: the dispatcher, the HTTP and stdio transports, and their seams. */
export {
  createMcpDispatcher,
  newSessionState,
  type DispatcherOptions,
  type McpDispatcher,
  type RequestScope,
  type SessionState,
} from './dispatcher.js';
export {
  createMcpHttpHandler,
  type AuthVerdict,
  type HttpHandlerOptions,
  type HttpServerHandle,
  type HttpServerOptions,
  type McpHttpHandler,
} from './http-server.js';
export { startHttpServer } from './http-start.js';
export { serveStdio, type StdioOptions, type StdioServer } from './stdio.js';
export { ListChangedFanout, type ChangeSink, type FanoutOptions } from './list-changed.js';
export { createRequestGuard, type OriginPolicy } from './origin.js';
export {
  LegacySessionStore,
  type LegacySession,
  type SessionStoreOptions,
} from './legacy-sessions.js';
export type { SessionBus, SessionLayer, SessionRecord, TransportName } from './session.js';
export type { HttpRoute } from './http-routes.js';
export {
  combineObservers,
  type CallObserver,
  type CallOutcome,
  type ObservedCall,
} from './observer.js';
export { bearerToken, challenge, type ChallengeParams } from './bearer.js';
export { WireError as RpcError } from '../errors.js';
export { setSseKeepAliveInterval } from './sse.js';
export {
  DEFAULT_MAX_BODY_BYTES,
  LEGACY_PROTOCOL_VERSIONS,
  MODERN_PROTOCOL_VERSIONS,
  LATEST_LEGACY_VERSION,
} from './protocol.js';
export { DEFAULT_PAGE_SIZE } from './pagination.js';
