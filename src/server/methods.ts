/**
 * The MCP methods the dispatcher answers, each a small function over the registry. A method gets
 * its `Call`: the request's params, scope, channel and the caller's view, resolved once by the
 * dispatcher; tools/call resolves its tool once too.
 */
import { wireError } from '../errors.js';
import type { Registry } from '../registry/registry.js';
import type { CallContext, OwnerFilter } from '../registry/types.js';
import type { RequestChannel } from './channel.js';
import { isPlainObject, type JsonRpcId } from './jsonrpc.js';
import type { ObservedCall } from './observer.js';
import { paginate } from './pagination.js';
import { checkParamHeaders } from './param-headers.js';
import {
  LATEST_LEGACY_VERSION,
  LEGACY_PROTOCOL_VERSIONS,
  LOG_LEVELS,
  MODERN_PROTOCOL_VERSIONS,
  type Implementation,
} from './protocol.js';
import { subscriptionsOf, type RequestScope } from './session.js';
import { subscriptionRefusal, type RefusalCounter, type ServerLimits } from './session-limits.js';

/** One dispatched request, as its method sees it. */
export interface Call {
  readonly id: JsonRpcId;
  readonly method: string;
  readonly params: Record<string, unknown>;
  readonly scope: RequestScope;
  readonly channel: RequestChannel | undefined;
  /** The caller's view, computed once per request (first thing in the dispatcher's try). */
  filter: OwnerFilter;
  /** The observer's record of this call, when someone observes. */
  readonly observed: ObservedCall | undefined;
}

export type MethodHandler = (call: Call) => unknown;

/** What the methods need besides the registry. */
export interface MethodDeps {
  readonly registry: Registry;
  readonly pageSize: number;
  readonly serverInfo: Implementation;
  readonly capabilities: Record<string, unknown>;
  readonly instructions: string | undefined;
  /** The session-side bounds (subscriptions per session, URI length). */
  readonly limits: ServerLimits;
  readonly refused: RefusalCounter | undefined;
  /** The handler's CallContext for this call (made only by methods that run handlers). */
  contextOf(call: Call): CallContext;
}

export function createMethods(deps: MethodDeps): Record<string, MethodHandler> {
  const { registry, pageSize, capabilities } = deps;
  return {
    initialize: (call) => initialize(call, deps),
    ping: () => ({}),
    'server/discover': () => {
      const result: Record<string, unknown> = {
        supportedVersions: MODERN_PROTOCOL_VERSIONS,
        capabilities,
      };
      if (deps.instructions !== undefined) result.instructions = deps.instructions;
      return result;
    },
    'tools/list': ({ params, filter }) =>
      listPage('tools', registry.listTools(filter), nameOf, params.cursor, pageSize),
    'tools/call': (call) => callTool(call, deps),
    'prompts/list': ({ params, filter }) =>
      listPage('prompts', registry.listPrompts(filter), nameOf, params.cursor, pageSize),
    'prompts/get': (call) => {
      const name = stringParam(call, 'name', 'prompts/get needs a string "name"');
      const args = objectArguments(call, 'prompts/get "arguments" must be an object');
      return registry.getPrompt(
        name,
        args as Record<string, string> | undefined,
        deps.contextOf(call),
        call.filter,
      );
    },
    'resources/list': ({ params, filter }) =>
      listPage('resources', registry.listResources(filter), uriOf, params.cursor, pageSize),
    'resources/templates/list': ({ params, filter }) =>
      listPage(
        'resourceTemplates',
        registry.listResourceTemplates(filter),
        templateOf,
        params.cursor,
        pageSize,
      ),
    'resources/read': (call) => {
      const uri = stringParam(call, 'uri', 'resources/read needs a string "uri"');
      return registry.readResource(uri, deps.contextOf(call), call.filter);
    },
    'resources/subscribe': (call) => {
      const uri = stringParam(call, 'uri', 'resources/subscribe needs a string "uri"');
      const session = call.scope.session;
      if (session === undefined) return {};
      const held = session.subscriptions;
      if (held?.has(uri) !== true) {
        const budget = session.subscribers?.budget;
        const refused = subscriptionRefusal(
          [uri],
          held,
          deps.limits,
          budget && { of: budget, principal: session.principal },
        );
        if (refused !== undefined) {
          deps.refused?.(refused.limit);
          throw refused.error;
        }
      }
      subscriptionsOf(session).add(uri);
      return {};
    },
    'resources/unsubscribe': (call) => {
      const uri = stringParam(call, 'uri', 'resources/unsubscribe needs a string "uri"');
      call.scope.session?.subscriptions?.delete(uri);
      return {};
    },
    'logging/setLevel': ({ params, scope }) => {
      const level = params.level;
      if (typeof level !== 'string' || !LOG_LEVELS.has(level))
        throw wireError('invalid_log_level', { level: String(level) });
      if (scope.session) scope.session.logLevel = level;
      return {};
    },
    'completion/complete': (call) => complete(call, deps),
  };
}

function initialize({ params, scope }: Call, deps: MethodDeps): Record<string, unknown> {
  const session = scope.session;
  const requested = typeof params.protocolVersion === 'string' ? params.protocolVersion : undefined;
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
    capabilities: deps.capabilities,
    serverInfo: deps.serverInfo,
  };
  if (deps.instructions !== undefined) result.instructions = deps.instructions;
  return result;
}

/**
 * tools/call: the tool is resolved once, in the caller's view, before anything about it is
 * checked, so a hidden tool answers exactly as an unknown one (parameter headers included).
 */
function callTool(call: Call, deps: MethodDeps): unknown {
  const name = stringParam(call, 'name', 'tools/call needs a string "name"');
  const args = objectArguments(call, 'tools/call "arguments" must be an object');
  const tool = deps.registry.findTool(name, call.filter);
  if (tool === undefined) throw wireError('unknown_tool', { name });
  const entry = tool.entry;
  if (call.observed !== undefined) call.observed.owner = entry.owner;
  const scope = call.scope;
  if (scope.era === 'modern' && scope.headers !== undefined) {
    const bad = checkParamHeaders(entry.inputSchema, args, scope.headers);
    if (bad !== undefined) throw bad;
  }
  const needs = entry.requiredCapabilities;
  if (needs !== undefined) {
    const missing = missingCapabilities(needs, scope);
    if (missing !== undefined) {
      const err = wireError(
        'missing_client_capability',
        { capabilities: Object.keys(missing).join(', ') },
        { requiredCapabilities: missing },
      );
      if (scope.era === 'modern') throw err;
      return {
        content: [{ type: 'text', text: `${err.message} (tool '${name}' needs it)` }],
        isError: true,
      };
    }
  }
  return deps.registry.callResolved(tool, args, deps.contextOf(call), call.filter);
}

async function complete(call: Call, deps: MethodDeps): Promise<Record<string, unknown>> {
  const { params } = call;
  const ref = params.ref;
  const argument = params.argument;
  if (
    !isPlainObject(ref) ||
    !isPlainObject(argument) ||
    typeof ref.type !== 'string' ||
    typeof argument.name !== 'string'
  ) {
    throw invalidParams('completion/complete needs "ref" and "argument" objects');
  }
  const given = isPlainObject(params.context) ? params.context.arguments : undefined;
  const context: Record<string, string> = {};
  if (isPlainObject(given)) {
    for (const [k, v] of Object.entries(given)) if (typeof v === 'string') context[k] = v;
  }
  const completion = await deps.registry.complete(
    ref as { type: string; name?: string; uri?: string },
    argument.name,
    typeof argument.value === 'string' ? argument.value : '',
    context,
    deps.contextOf(call),
    call.filter,
  );
  return { completion };
}

function invalidParams(detail: string): Error {
  return wireError('invalid_params', { detail });
}

function stringParam(call: Call, key: string, problem: string): string {
  const v = call.params[key];
  if (typeof v !== 'string') throw invalidParams(problem);
  return v;
}

function objectArguments(call: Call, problem: string): Record<string, unknown> | undefined {
  const args = call.params.arguments;
  if (args === undefined || args === null) return undefined;
  if (!isPlainObject(args)) throw invalidParams(problem);
  return args;
}

function listPage<T>(
  key: string,
  list: readonly T[],
  keyOf: (item: T) => string,
  cursor: unknown,
  pageSize: number,
): Record<string, unknown> {
  const page = paginate(list, keyOf, cursor, pageSize);
  return page.nextCursor === undefined
    ? { [key]: page.items }
    : { [key]: page.items, nextCursor: page.nextCursor };
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

const nameOf = (x: { name: string }): string => x.name;
const uriOf = (x: { uri: string }): string => x.uri;
const templateOf = (x: { uriTemplate: string }): string => x.uriTemplate;
