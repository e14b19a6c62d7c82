/**
 * `mcp.tool` and its companions `remove_tool`, `list_tools`, `call_tool` and `count` (LUA_API
 * §2), with the checks of a tool's schema table; mcp-registry.ts merges them into `mcp`.
 */
import { LuaMulti, type HostCall, type HostFunctionSpec } from '../lua/state.js';
import { LuaArgumentError } from '../lua/errors.js';
import { wasRaised } from '../registry/registry.js';
import { toToolResult } from '../registry/results.js';
import type { OwnerFilter } from '../registry/types.js';
import { checkFunction, checkString, checkTable, optString, optTable } from './args.js';
import { describeFailure, str, type RegistryBinding } from './mcp-binding.js';

/** Keywords whose value is an array: an empty Lua table there means `[]`, not `{}`. */
const ARRAY_KEYWORDS = new Set([
  'required',
  'enum',
  'anyOf',
  'allOf',
  'oneOf',
  'prefixItems',
  'examples',
]);

/** Fixes the one ambiguity of Lua tables in JSON Schemas: `{}` where an array is meant. */
export function normalizeSchema(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(normalizeSchema);
  if (typeof schema !== 'object' || schema === null || schema instanceof Uint8Array) return schema;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(schema)) {
    if (ARRAY_KEYWORDS.has(key) && isEmptyObject(value)) out[key] = [];
    else out[key] = normalizeSchema(value);
  }
  return out;
}

function isEmptyObject(v: unknown): boolean {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && Object.keys(v).length === 0;
}

/** A tool schema's `requires`: client capability names (`{"sampling"}`) or a capability table. */
function requiredCapabilities(v: unknown): string[] | undefined {
  if (v === undefined) return undefined;
  const names = Array.isArray(v) ? v : typeof v === 'object' && v !== null ? Object.keys(v) : [v];
  if (!names.every((n) => typeof n === 'string'))
    throw new LuaArgumentError(
      "bad argument #2 to 'tool' (requires must list client capability names)",
    );
  return names.length > 0 ? (names as string[]) : undefined;
}

function plainObject(v: unknown, what: string): Record<string, unknown> | undefined {
  if (v === undefined) return undefined;
  if (typeof v === 'object' && v !== null && !Array.isArray(v))
    return normalizeSchema(v) as Record<string, unknown>;
  throw new LuaArgumentError(`${what} must be a table`);
}

export function toolFunctions(b: RegistryBinding): Record<string, HostFunctionSpec> {
  const { registry } = b;
  return {
    tool: toolSpec(b),
    remove_tool: {
      fn: (args, call) => registry.removeTool(checkString(args, call, 1, 'remove_tool')),
    },
    list_tools: {
      fn: (args, call) => {
        const session = optString(args, call, 1, 'list_tools');
        let filter: OwnerFilter;
        if (session !== undefined) {
          // undefined is a view too (everything); null means no such session.
          const view = b.sessionViews === undefined ? null : b.sessionViews(session);
          if (view === null) return new LuaMulti([undefined, `unknown session: ${session}`]);
          filter = view;
        }
        return registry
          .listTools(filter)
          .map((t) => ({ name: t.name, description: t.description, input_schema: t.inputSchema }));
      },
    },
    call_tool: callToolSpec(b),
    count: { fn: () => registry.countTools() },
  };
}

/** `mcp.tool(name, schema, handler)`. */
function toolSpec(b: RegistryBinding): HostFunctionSpec {
  const { registry, owner, state } = b;
  return {
    fn: (args, call) => {
      const name = checkString(args, call, 1, 'tool');
      if (name === '')
        throw new LuaArgumentError("bad argument #1 to 'tool' (tool name must not be empty)");
      const schema = checkTable(args, call, 2, 'tool') as Record<string, unknown>;
      checkFunction(call, 3, 'tool');
      const inputSchema = plainObject(
        schema.input_schema ?? schema.inputSchema,
        'input_schema',
      ) ?? {
        type: 'object',
        properties: {},
      };
      const timeoutMs = typeof schema.timeout_ms === 'number' ? schema.timeout_ms : undefined;
      b.admitRegistration(`tool:${name}`);
      const ref = call.ref(3);
      try {
        registry.addTool(owner, {
          name,
          description: str(schema.description) ?? '',
          title: str(schema.title),
          inputSchema,
          outputSchema: plainObject(schema.output_schema ?? schema.outputSchema, 'output_schema'),
          annotations: plainObject(schema.annotations, 'annotations'),
          icons: Array.isArray(schema.icons) ? schema.icons : undefined,
          timeoutMs,
          requiredCapabilities: requiredCapabilities(schema.requires),
          handler: async (input, ctx) => toToolResult(await b.invoke(ref, timeoutMs, input, ctx)),
        });
      } catch (err) {
        state.unref(ref);
        throw new LuaArgumentError(describeFailure(err));
      }
      return undefined;
    },
  };
}

/** `mcp.call_tool(name, params)`: the result's content blocks, or `nil, err`. */
function callToolSpec(b: RegistryBinding): HostFunctionSpec {
  const { registry } = b;
  return {
    async: true,
    fn: async (args, call: HostCall) => {
      const name = checkString(args, call, 1, 'call_tool');
      const params = optTable(args, call, 2, 'call_tool') ?? {};
      // As Botster's refusals: `nil, err`, before the name goes anywhere that keeps it.
      const tooLong = b.nameRefusal(name);
      if (tooLong !== undefined) return new LuaMulti([undefined, tooLong]);
      // A place of the plugin's calls in flight, as mcp.call takes (refused: `nil, err`).
      const flight = b.flight;
      const who = flight.who();
      const busy = flight.refusal(who);
      if (busy !== undefined) return new LuaMulti([undefined, busy]);
      const ctx = b.contextFor(call, args[2]);
      flight.enter(who);
      try {
        const result = await registry.callTool(name, params, ctx, ctx.filter);
        // As Botster: a raised error (or a refused call) is `nil, err`; an `isError` answer
        // (a proxied tool's, or a returned one) keeps its content blocks, with is_error true.
        if (result.isError && wasRaised(result)) {
          const text = result.content
            .map((c) => (typeof c.text === 'string' ? c.text : ''))
            .join('\n');
          return new LuaMulti([undefined, text || 'the tool reported an error']);
        }
        if (result.isError) return new LuaMulti([result.content, undefined, true]);
        return new LuaMulti([result.content]);
      } catch (err) {
        return new LuaMulti([undefined, describeFailure(err)]);
      } finally {
        flight.leave(who);
      }
    },
  };
}
