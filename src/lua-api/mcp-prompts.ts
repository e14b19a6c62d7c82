/**
 * `mcp.prompt` and its companions `remove_prompt`, `list_prompts`, `get_prompt` and
 * `count_prompts` (LUA_API §2); mcp-registry.ts merges them into `mcp`.
 */
import { LuaMulti, type HostFunctionSpec } from '../lua/state.js';
import { LuaArgumentError } from '../lua/errors.js';
import { toPromptResult } from '../registry/results.js';
import type { PromptArgument } from '../registry/types.js';
import { checkFunction, checkString, checkTable, optTable } from './args.js';
import { completerRefs, luaCompleter } from './completions.js';
import { describeFailure, str, type RegistryBinding } from './mcp-binding.js';

export function promptFunctions(b: RegistryBinding): Record<string, HostFunctionSpec> {
  const { registry } = b;
  return {
    prompt: promptSpec(b),
    remove_prompt: {
      fn: (args, call) => registry.removePrompt(checkString(args, call, 1, 'remove_prompt')),
    },
    // As Botster: `arguments` is left out when a prompt has none.
    list_prompts: {
      fn: () =>
        registry
          .listPrompts()
          .map(({ arguments: a, ...rest }) => (a.length > 0 ? { ...rest, arguments: a } : rest)),
    },
    get_prompt: {
      async: true,
      fn: async (args, call) => {
        const name = checkString(args, call, 1, 'get_prompt');
        const input = (optTable(args, call, 2, 'get_prompt') ?? {}) as Record<string, string>;
        const tooLong = b.nameRefusal(name, 'a prompt name');
        if (tooLong !== undefined) return new LuaMulti([undefined, tooLong]);
        // A place of the plugin's calls in flight, as mcp.call takes (refused: `nil, err`).
        return b.flight.within<unknown>(
          async () => {
            try {
              const ctx = b.contextFor(call, undefined);
              return await registry.getPrompt(name, input, ctx, ctx.filter);
            } catch (err) {
              return new LuaMulti([undefined, describeFailure(err)]);
            }
          },
          (busy) => new LuaMulti([undefined, busy]),
        );
      },
    },
    count_prompts: { fn: () => registry.countPrompts() },
  };
}

/** `mcp.prompt(name, schema, handler)`; each argument may carry a `complete` function. */
function promptSpec(b: RegistryBinding): HostFunctionSpec {
  const { registry, owner, state } = b;
  return {
    fn: (args, call) => {
      const name = checkString(args, call, 1, 'prompt');
      if (name === '')
        throw new LuaArgumentError("bad argument #1 to 'prompt' (prompt name must not be empty)");
      const schema = checkTable(args, call, 2, 'prompt') as Record<string, unknown>;
      checkFunction(call, 3, 'prompt');
      const list = Array.isArray(schema.arguments) ? schema.arguments : [];
      const promptArgs: PromptArgument[] = list.map((a, i) => {
        const arg = a as Record<string, unknown>;
        if (typeof arg?.name !== 'string') {
          throw new LuaArgumentError(
            `bad argument #2 to 'prompt' (arguments[${i + 1}].name must be a string)`,
          );
        }
        const out: PromptArgument = { name: arg.name };
        if (typeof arg.description === 'string') out.description = arg.description;
        if (typeof arg.required === 'boolean') out.required = arg.required;
        return out;
      });
      const timeoutMs = typeof schema.timeout_ms === 'number' ? schema.timeout_ms : undefined;
      const completers = completerRefs(
        call,
        promptArgs.map((a) => a.name),
        (_name, i) => ['arguments', i + 1, 'complete'],
      );
      b.admitRegistration(`prompt:${name}`);
      const ref = call.ref(3);
      const description = str(schema.description) ?? '';
      registry.addPrompt(owner, {
        name,
        description,
        title: str(schema.title),
        icons: Array.isArray(schema.icons) ? schema.icons : undefined,
        arguments: promptArgs,
        timeoutMs,
        complete: luaCompleter(state, completers, timeoutMs),
        handler: async (input, ctx) =>
          toPromptResult(await b.invoke(ref, timeoutMs, input, ctx), name, description),
      });
      return undefined;
    },
  };
}
