/**
 * The registry's data model: what a tool, prompt or resource is once registered, what a call's
 * context carries, and what handlers return. Nothing here knows about Lua or HTTP.
 */

export type JsonValue =
  null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };
export type JsonObject = { [key: string]: JsonValue };

/** Who is calling and on whose behalf; handed to every handler (LUA_API §2.1). */
export interface CallContext {
  session_uuid?: string;
  hub_id: string;
  agent_name?: string;
  target?: string;
  principal?: string;
  /** The calling plugin, when the call comes from Lua. */
  plugin?: string;
  request_id?: string | number;
  /** The URI being read (resources only). */
  uri?: string;
  /**
   * Other fields of a context table a Lua caller passed to `mcp.call_tool` (Botster's
   * `workspace_id`, `branch_name`, ...): shown to the handler as they are. Never identity: who
   * is calling always comes from the fields above.
   */
  fields?: Record<string, string | number | boolean>;
  /** Aborted when the caller cancels or goes away. */
  signal?: AbortSignal;
  /**
   * The same abort without an AbortSignal being made (transports set it; reading `signal` costs
   * an AbortController and a listener): a hot path that only needs to hear it watches this.
   * Not enumerable where set, so a copy given a signal of its own (`{ ...ctx, signal }`) drops it.
   */
  abortWatch?: AbortWatch;
  /** The client that made the call, for messages back to it while the call runs. */
  peer?: CallPeer;
  /**
   * The caller's view: which owners it may see. Calls a handler makes on the caller's behalf
   * (execute, mcp.call) pass it on, so they are authorized as if the caller had made them.
   */
  filter?: OwnerFilter;
}

/** Hears a call's abort once (an object, so a watcher needs no closure). */
export interface AbortWatcher {
  handleAbort(reason: unknown): void;
}

/** A call's abort, heard without an AbortSignal (see CallContext.abortWatch). */
export interface AbortWatch {
  readonly aborted: boolean;
  /** Calls `w.handleAbort` once the call is aborted; false (and no call) when it already is. */
  watch(w: AbortWatcher): boolean;
  unwatch(w: AbortWatcher): void;
}

export type LogLevel =
  'debug' | 'info' | 'notice' | 'warning' | 'error' | 'critical' | 'alert' | 'emergency';

/** The MCP log levels (RFC 5424 severities), mildest first. */
export const LOG_LEVELS: ReadonlySet<string> = new Set<LogLevel>([
  'debug',
  'info',
  'notice',
  'warning',
  'error',
  'critical',
  'alert',
  'emergency',
]);

/**
 * The caller's side of a running call (MCP's server-to-client direction). Transports build it;
 * handlers use it for progress, log messages, sampling and elicitation.
 */
export interface CallPeer {
  /** Capabilities the client declared (2025: at initialize; 2026: in the request's envelope). */
  readonly clientCapabilities: Record<string, unknown> | undefined;
  /** Sends notifications/progress when the request carried a progress token; false if it did not. */
  progress(progress: number, total?: number, message?: string): boolean;
  /** Sends notifications/message unless the client's logging/setLevel filters it out. */
  log(level: LogLevel, data: unknown, logger?: string): void;
  /**
   * A request to the client (sampling/createMessage, elicitation/create, roots/list): a server
   * request in the 2025 eras, an input-required round trip in 2026-07-28. Resolves with the
   * client's result; rejects when the client cannot or will not answer.
   */
  request(
    method: string,
    params: Record<string, unknown>,
    opts?: PeerRequestOptions,
  ): Promise<Record<string, unknown>>;
  /**
   * Lets go of the client's connection while the call goes on (SSE polling, 2025-11-25 HTTP);
   * the client reconnects after `retryMs` and receives the rest. False when it cannot.
   */
  pollLater?(retryMs: number): boolean;
}

export interface PeerRequestOptions {
  /**
   * 2026-07-28: the key of this request in `inputRequests` (the client answers under the same
   * key). Requests made in one round and replayed in the next must use the same keys.
   */
  key?: string;
}

/** What a `complete` handler returns for `completion/complete`. */
export interface CompletionResult {
  values: string[];
  total?: number;
  hasMore?: boolean;
}

/**
 * Suggests values for one argument of a prompt or resource template: `argument` is the name,
 * `value` what the user typed so far, `context` the arguments already chosen.
 */
export type CompleteHandler = (
  argument: string,
  value: string,
  context: Record<string, string>,
  ctx: CallContext,
) => Promise<CompletionResult>;

export interface ContentItem {
  type: string;
  [key: string]: unknown;
}

export interface ToolResult {
  content: ContentItem[];
  isError?: boolean;
  structuredContent?: Record<string, unknown>;
  _meta?: Record<string, unknown>;
}

export type ToolHandler = (args: Record<string, unknown>, ctx: CallContext) => Promise<ToolResult>;

export interface ToolSpec {
  name: string;
  title?: string;
  description: string;
  inputSchema: Record<string, unknown>;
  outputSchema?: Record<string, unknown>;
  annotations?: Record<string, unknown>;
  icons?: unknown[];
  /** Wall-clock limit of one call; the handler's owner enforces it. */
  timeoutMs?: number;
  /**
   * Client capabilities (`sampling`, `elicitation`, `roots`) a call needs; a caller that did not
   * declare one is refused before the handler runs (`missing_client_capability` in 2026-07-28,
   * a tool error before).
   */
  requiredCapabilities?: string[];
  handler: ToolHandler;
}

/** A registered tool: its spec plus the plugin (or other source) that owns it. */
export interface ToolEntry extends ToolSpec {
  owner: string;
}

/** A tool as `tools/list` shows it. */
export interface ToolInfo {
  name: string;
  title?: string;
  description: string;
  inputSchema: Record<string, unknown>;
  outputSchema?: Record<string, unknown>;
  annotations?: Record<string, unknown>;
  icons?: unknown[];
}

export interface PromptArgument {
  name: string;
  description?: string;
  required?: boolean;
}

export interface PromptMessage {
  role: 'user' | 'assistant';
  content: ContentItem;
}

export interface PromptResult {
  description?: string;
  messages: PromptMessage[];
}

export type PromptHandler = (
  args: Record<string, string>,
  ctx: CallContext,
) => Promise<PromptResult>;

export interface PromptSpec {
  name: string;
  title?: string;
  description: string;
  arguments: PromptArgument[];
  icons?: unknown[];
  handler: PromptHandler;
  /** Wall-clock limit of one call; the handler's owner enforces it. */
  timeoutMs?: number;
  /** Answers `completion/complete` for this prompt's arguments. */
  complete?: CompleteHandler;
}

export interface PromptEntry extends PromptSpec {
  owner: string;
}

export interface PromptInfo {
  name: string;
  title?: string;
  description: string;
  arguments: PromptArgument[];
  icons?: unknown[];
}

export interface ResourceContents {
  uri: string;
  mimeType?: string;
  text?: string;
  blob?: string;
}

export interface ResourceReadResult {
  contents: ResourceContents[];
}

/** `params` holds the template's variables (empty for a fixed URI). */
export type ResourceHandler = (
  uri: string,
  params: Record<string, string>,
  ctx: CallContext,
) => Promise<ResourceReadResult>;

export interface ResourceSpec {
  /** A fixed URI or an RFC 6570 level-1 template (`note://{id}`). */
  uriTemplate: string;
  name: string;
  title?: string;
  description?: string;
  mimeType?: string;
  icons?: unknown[];
  handler: ResourceHandler;
  /** Wall-clock limit of one read; the handler's owner enforces it. */
  timeoutMs?: number;
  /** Answers `completion/complete` for this template's variables. */
  complete?: CompleteHandler;
}

export interface ResourceEntry extends ResourceSpec {
  owner: string;
  isTemplate: boolean;
}

export interface ResourceInfo {
  uri: string;
  name: string;
  title?: string;
  description?: string;
  mimeType?: string;
  icons?: unknown[];
}

export interface ResourceTemplateInfo {
  uriTemplate: string;
  name: string;
  title?: string;
  description?: string;
  mimeType?: string;
  icons?: unknown[];
}

export type EntryKind = 'tools' | 'prompts' | 'resources';

/**
 * Which owners a caller may see. `undefined` means everything; otherwise an owner is visible
 * when the predicate says so. Scoping (issue "agent sessions") builds these per principal.
 */
export type OwnerFilter = ((owner: string) => boolean) | undefined;
