/**
 * The context functions that ask the client and wait for its answer: `context.elicit`,
 * `context.sample`, `context.list_roots` and `context.input`, each keyed so a 2026 input round
 * can match answers to questions.
 */
import { LuaArgumentError } from '../lua/errors.js';
import { LuaMulti, type HostFunctionSpec } from '../lua/state.js';
import type { CallPeer } from '../registry/types.js';
import { isObject, specTable, type LiveCall, type LiveLookup } from './context-calls.js';

/** Methods a handler may send to the client, by the Lua function that sends them. */
const INPUT_METHODS: Readonly<Record<string, string>> = {
  'elicitation/create': 'elicit',
  'sampling/createMessage': 'sample',
  'roots/list': 'list_roots',
};

function peerOf(c: LiveCall, fname: string): CallPeer {
  const peer = c.ctx.peer;
  if (peer === undefined) {
    throw new LuaArgumentError(
      `context.${fname}: this call has no MCP client to answer it (it was not made by a client)`,
    );
  }
  return peer;
}

function keyFor(c: LiveCall, kind: string, given: unknown, fname: string): string {
  if (given !== undefined) {
    if (typeof given !== 'string' || given === '') {
      throw new LuaArgumentError(`bad argument #1 to '${fname}' (key must be a non-empty string)`);
    }
    return given;
  }
  c.seq ??= {};
  const n = (c.seq[kind] ?? 0) + 1;
  c.seq[kind] = n;
  return `${kind}_${n}`;
}

async function ask(
  c: LiveCall,
  fname: string,
  method: string,
  params: Record<string, unknown>,
  key: string,
): Promise<unknown> {
  try {
    return await peerOf(c, fname).request(method, params, { key });
  } catch (err) {
    throw new LuaArgumentError(`context.${fname}: ${(err as Error).message ?? String(err)}`);
  }
}

/** One request of `context.input`: `{ method = ..., params = {...} }` asked under `key`. */
function askOne(c: LiveCall, key: string, r: unknown): Promise<unknown> {
  const method = isObject(r) ? r.method : undefined;
  if (typeof method !== 'string' || !Object.hasOwn(INPUT_METHODS, method)) {
    throw new LuaArgumentError(
      `bad argument #1 to 'input' (${key}.method must be elicitation/create, sampling/createMessage or roots/list)`,
    );
  }
  const params = isObject((r as Record<string, unknown>).params)
    ? ((r as Record<string, unknown>).params as Record<string, unknown>)
    : {};
  return ask(c, 'input', method, params, key);
}

export function requestFunctions(live: LiveLookup): Record<string, HostFunctionSpec> {
  return {
    elicit: {
      async: true,
      fn: (args) => {
        const c = live(args[0], 'elicit');
        const spec = specTable(args[1], 'elicit');
        if (typeof spec.message !== 'string') {
          throw new LuaArgumentError("bad argument #1 to 'elicit' (message must be a string)");
        }
        const params = paramsOf(spec, ELICIT_ALIASES);
        const schema = params.requestedSchema;
        if (schema === undefined) params.requestedSchema = { type: 'object', properties: {} };
        else if (!isObject(schema)) {
          throw new LuaArgumentError(
            "bad argument #1 to 'elicit' (requested_schema must be a table)",
          );
        } else params.requestedSchema = fixSchemaArrays(schema);
        const key = keyFor(c, 'elicit', spec.key, 'elicit');
        return ask(c, 'elicit', 'elicitation/create', params, key);
      },
    },
    sample: {
      async: true,
      fn: (args) => {
        const c = live(args[0], 'sample');
        const spec = specTable(args[1], 'sample');
        const params = paramsOf(spec, SAMPLE_ALIASES);
        if (typeof spec.prompt === 'string') {
          delete params.prompt;
          params.messages ??= [{ role: 'user', content: { type: 'text', text: spec.prompt } }];
        }
        if (!Array.isArray(params.messages) || params.messages.length === 0) {
          throw new LuaArgumentError(
            "bad argument #1 to 'sample' (a prompt string or a non-empty messages array expected)",
          );
        }
        params.maxTokens ??= 1000;
        const key = keyFor(c, 'sample', spec.key, 'sample');
        return ask(c, 'sample', 'sampling/createMessage', params, key);
      },
    },
    list_roots: {
      async: true,
      fn: (args) => {
        const c = live(args[0], 'list_roots');
        const spec = args[1] === undefined ? {} : specTable(args[1], 'list_roots');
        const key = keyFor(c, 'roots', spec.key, 'list_roots');
        return ask(c, 'list_roots', 'roots/list', {}, key);
      },
    },
    input: {
      async: true,
      fn: async (args) => {
        const c = live(args[0], 'input');
        const requests = specTable(args[1], 'input');
        const keys = Object.keys(requests);
        if (keys.length === 0) {
          throw new LuaArgumentError("bad argument #1 to 'input' (at least one request expected)");
        }
        const asks = keys.map((key) => askOne(c, key, requests[key]));
        const answers = await Promise.all(asks);
        const out: Record<string, unknown> = {};
        keys.forEach((key, i) => (out[key] = answers[i]));
        return new LuaMulti([out]);
      },
    },
  };
}

const ELICIT_ALIASES: Record<string, string> = { requested_schema: 'requestedSchema' };
const SAMPLE_ALIASES: Record<string, string> = {
  max_tokens: 'maxTokens',
  system_prompt: 'systemPrompt',
  model_preferences: 'modelPreferences',
  stop_sequences: 'stopSequences',
  include_context: 'includeContext',
};

/** The MCP params of a spec table: the `key` dropped, snake_case aliases renamed. */
function paramsOf(
  spec: Record<string, unknown>,
  aliases: Record<string, string>,
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(spec)) {
    if (k === 'key') continue;
    out[Object.hasOwn(aliases, k) ? aliases[k]! : k] = v;
  }
  return out;
}

/** `required = {}` in a Lua schema means an empty array, not an empty object. */
function fixSchemaArrays(schema: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...schema };
  if (isObject(out.required) && Object.keys(out.required).length === 0) out.required = [];
  return out;
}
