/**
 * `mcp.resource` and its companions `remove_resource`, `list_resource_templates`,
 * `list_resources`, `read_resource`, `count_resources` and `resource_updated` (LUA_API §2);
 * mcp-registry.ts merges them into `mcp`.
 */
import { LuaMulti, type HostFunctionSpec } from '../lua/state.js';
import { LuaArgumentError } from '../lua/errors.js';
import { RegistryError } from '../registry/errors.js';
import { toResourceContents } from '../registry/results.js';
import { templateVariables } from '../registry/uri-template.js';
import { checkFunction, checkString, optTable } from './args.js';
import { luaResourceItem } from './botster-compat.js';
import { completerRefs, luaCompleter } from './completions.js';
import { describeFailure, str, type RegistryBinding } from './mcp-binding.js';
import { RESOURCE_UPDATE_URI_LENGTH } from './plugin-limits.js';

export function resourceFunctions(b: RegistryBinding): Record<string, HostFunctionSpec> {
  const { registry } = b;
  return {
    resource: resourceSpec(b),
    remove_resource: {
      fn: (args, call) => registry.removeResource(checkString(args, call, 1, 'remove_resource')),
    },
    list_resource_templates: {
      fn: () =>
        registry.listResourceTemplates().map((r) => ({
          uri_template: r.uriTemplate,
          uriTemplate: r.uriTemplate,
          name: r.name,
          // As Botster: "" when none was given, so `.. t.description` does not raise.
          description: r.description ?? '',
          mime_type: r.mimeType,
          mimeType: r.mimeType,
        })),
    },
    list_resources: {
      fn: () =>
        registry.listResources().map((r) => ({
          uri: r.uri,
          name: r.name,
          description: r.description ?? '',
          mime_type: r.mimeType,
          mimeType: r.mimeType,
        })),
    },
    read_resource: {
      async: true,
      fn: async (args, call) => {
        const uri = checkString(args, call, 1, 'read_resource');
        const tooLong = b.uriRefusal(uri);
        if (tooLong !== undefined) return new LuaMulti([undefined, tooLong]);
        const ctx = b.contextFor(call, args[1]);
        // A place of the plugin's calls in flight, as mcp.call takes (refused: `nil, err`): a
        // read may wait on another plugin's handler or an upstream as long as a tool call.
        return b.flight.within(
          async () => {
            try {
              const result = await registry.readResource(uri, ctx, ctx.filter);
              return result.contents.map(luaResourceItem);
            } catch (err) {
              return new LuaMulti([
                undefined,
                err instanceof RegistryError ? err.message : describeFailure(err),
              ]);
            }
          },
          (busy) => new LuaMulti([undefined, busy]),
        );
      },
    },
    count_resources: { fn: () => registry.countResources() },
    resource_updated: {
      fn: (args, call) => {
        const uri = checkString(args, call, 1, 'resource_updated');
        // A longer URI matches no subscription, yet would be copied to the hub (and the bus).
        if (uri.length > RESOURCE_UPDATE_URI_LENGTH)
          throw new LuaArgumentError(
            `bad argument #1 to 'resource_updated' (a URI may be at most ${RESOURCE_UPDATE_URI_LENGTH} characters, as limits.subscriptions.uri_length allows by default; this one has ${uri.length})`,
          );
        if (b.updates.admit()) registry.resourceUpdated(uri);
        return undefined;
      },
    },
  };
}

/** `mcp.resource(uri, schema, handler)`: a fixed URI or a level-1 template (`note://{id}`). */
function resourceSpec(b: RegistryBinding): HostFunctionSpec {
  const { registry, owner, state } = b;
  return {
    fn: (args, call) => {
      const uri = checkString(args, call, 1, 'resource');
      if (uri === '')
        throw new LuaArgumentError("bad argument #1 to 'resource' (URI must not be empty)");
      const schema = (optTable(args, call, 2, 'resource') ?? {}) as Record<string, unknown>;
      checkFunction(call, 3, 'resource');
      const mimeType = str(schema.mime_type ?? schema.mimeType);
      const timeoutMs = typeof schema.timeout_ms === 'number' ? schema.timeout_ms : undefined;
      const completers = completerRefs(call, templateVariables(uri), (name) => ['complete', name]);
      b.admitRegistration(`resource:${uri}`);
      const ref = call.ref(3);
      registry.addResource(owner, {
        uriTemplate: uri,
        name: str(schema.name) ?? uri,
        title: str(schema.title),
        description: str(schema.description),
        mimeType,
        icons: Array.isArray(schema.icons) ? schema.icons : undefined,
        timeoutMs,
        complete: luaCompleter(state, completers, timeoutMs),
        handler: async (readUri, params, ctx) => ({
          contents: toResourceContents(
            await b.invoke(ref, timeoutMs, params, ctx),
            readUri,
            mimeType,
          ),
        }),
      });
      return undefined;
    },
  };
}
