/**
 * chilkat.Mcp's methods as called from Lua (chilkat.ts dispatches them): the two that answer at
 * once, and the ones that wait, started here (arguments checked first) and registered with
 * ChilkatObjects under the wait key the Lua side then waits on.
 */
import { LuaArgumentError } from '../lua/errors.js';
import type { HostCall } from '../lua/state.js';
import { strArg } from './chilkat-args.js';
import type { JsonDoc } from './chilkat-json.js';
import type { ChilkatMcp, Outcome } from './chilkat-mcp.js';
import type { ChilkatObjects } from './chilkat-objects.js';

/** Runs method `name` of `m`: its result, or (for a method that waits) the wait key. */
export function mcpMethod(
  objects: ChilkatObjects,
  m: ChilkatMcp,
  name: string,
  args: unknown[],
  call: HostCall,
): unknown {
  switch (name) {
    case 'get_last_json_data': {
      const doc = objects.arg(args, call, 1, name, 'JsonObject');
      doc.root = structuredClone((m.lastJson ?? {}) as never);
      return true;
    }
    case 'set_connection_settings': {
      const s = objects.arg(args, call, 1, name, 'Socket');
      m.net = {
        proxyHost: s.http_proxy_hostname || undefined,
        proxyPort: s.http_proxy_port || undefined,
        proxyUser: s.http_proxy_username || undefined,
        proxyPassword: s.http_proxy_password || undefined,
        localAddress: s.client_ip_address || undefined,
      };
      m.lastMethodSuccess = true;
      m.lastErrorText = 'SetConnectionSettings: Success';
      return true;
    }
  }
  return objects.startWait(waitingRun(objects, m, name, args, call));
}

/** A method that waits, its arguments checked: what starts it. */
function waitingRun(
  objects: ChilkatObjects,
  m: ChilkatMcp,
  name: string,
  args: unknown[],
  call: HostCall,
): () => Promise<Outcome> {
  switch (name) {
    case 'connect': {
      const url = strArg(args, call, 1, name);
      return () => m.connect(url);
    }
    case 'list_tools':
    case 'list_resources':
    case 'list_prompts': {
      const doc = objects.arg(args, call, 1, name, 'JsonObject');
      const method = name;
      return () =>
        m
          .request(pascal(method), (c, o) =>
            method === 'list_tools'
              ? c.listTools(undefined, o)
              : method === 'list_prompts'
                ? c.listPrompts(undefined, o)
                : c.listResources(undefined, o),
          )
          .then(into(doc));
    }
    case 'call_tool': {
      const tool = strArg(args, call, 1, name);
      const input = objects.arg(args, call, 2, name, 'JsonObject');
      const out = objects.arg(args, call, 3, name, 'JsonObject');
      const params = structuredClone(input.root);
      return () =>
        m
          .request('CallTool', (c, o) => c.callTool({ name: tool, arguments: params }, o))
          .then(into(out));
    }
    case 'read_resource': {
      const uri = strArg(args, call, 1, name);
      const out = objects.arg(args, call, 2, name, 'JsonObject');
      return () => m.request('ReadResource', (c, o) => c.readResource({ uri }, o)).then(into(out));
    }
    case 'get_prompt':
      return getPromptRun(objects, m, args, call);
    case 'close':
      return () => m.close();
    default:
      throw new LuaArgumentError(`chilkat.Mcp has no method '${name}'`);
  }
}

/** `get_prompt(name, input, out)`: the input's values go as strings (JSON for the others). */
function getPromptRun(
  objects: ChilkatObjects,
  m: ChilkatMcp,
  args: unknown[],
  call: HostCall,
): () => Promise<Outcome> {
  const name = 'get_prompt';
  const prompt = strArg(args, call, 1, name);
  const input = objects.arg(args, call, 2, name, 'JsonObject');
  const out = objects.arg(args, call, 3, name, 'JsonObject');
  const params = Object.fromEntries(
    Object.entries(input.root).map(([k, v]) => [k, typeof v === 'string' ? v : JSON.stringify(v)]),
  );
  return () =>
    m
      .request('GetPrompt', (c, o) => c.getPrompt({ name: prompt, arguments: params }, o))
      .then(into(out));
}

/** A method's answer put into `doc` (an empty object for none); Lua gets `true`. */
function into(doc: JsonDoc): (o: Outcome) => Outcome {
  return (o: Outcome) => {
    if (o.kind === 'ok') {
      doc.root = (o.values[0] ?? {}) as never;
      return { kind: 'ok', values: [true] } as Outcome;
    }
    return o;
  };
}

function pascal(snake: string): string {
  return snake.replace(/(^|_)([a-z])/g, (_m, _u, c: string) => c.toUpperCase());
}
