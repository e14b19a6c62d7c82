/**
 * `require("chilkat")` (LUA_API §4): installs the host side of `chilkat.Mcp`, `chilkat.JsonObject`
 * and `chilkat.Socket`; the Lua side is a built-in module that `require` compiles on first use
 * (see builtinModule), so states that never use it pay for two host functions. Objects live in a per-state table keyed by id;
 * property reads and writes are checked here (unknown name, wrong type, read-only, range).
 */
import { LuaArgumentError } from '../lua/errors.js';
import { LuaMulti, type HostCall, type HostFunctionSpec, type LuaState } from '../lua/state.js';
import { LuaType, luaTypeName } from '../lua/wasm.js';
import { CHILKAT_MODULE } from './chilkat-lua.js';
import { JsonDoc } from './chilkat-json.js';
import { ChilkatMcp, type Outcome } from './chilkat-mcp.js';
import { PROPS, type SocketSettings } from './chilkat-props.js';
import { locate } from './vfs.js';

type Json = Parameters<JsonDoc['set']>[1];

const RAISE = '\0chilkat:raise';

type Obj =
  | { cls: 'Mcp'; v: ChilkatMcp }
  | { cls: 'JsonObject'; v: JsonDoc }
  | { cls: 'Socket'; v: SocketSettings };

export interface ChilkatOptions {
  /** The folder behind `/source/` (for `debug_log_file_path`). */
  root?: string;
}

export function installChilkat(state: LuaState, opts: ChilkatOptions): void {
  const objects = new Map<number, Obj>();
  const disposed = new Map<number, Obj['cls']>();
  const waits = new Map<number, Promise<Outcome>>();
  let nextId = 1;
  const debugFile = (path: string): string | { error: string } => {
    if (opts.root === undefined) return { error: 'this state has no /source/ folder' };
    const where = locate(opts.root, path);
    if (typeof where === 'string') return { error: where };
    if (where.rel !== 'tmp' && !where.rel.startsWith('tmp/'))
      return { error: `${path}: read-only (only /source/tmp/ is writable)` };
    return where.disk;
  };

  const lookup = (id: unknown, what: string): Obj => {
    if (typeof id !== 'number') throw new LuaArgumentError(`${what}: not a chilkat object`);
    const o = objects.get(id);
    if (!o) {
      const cls = disposed.get(id);
      if (cls) throw new LuaArgumentError(`chilkat.${cls}: the object was disposed (${what})`);
      throw new LuaArgumentError(`${what}: not a chilkat object`);
    }
    return o;
  };

  /** An argument that must be a chilkat object of class `cls` (passed as `{__chilkat=id}`). */
  interface ByClass {
    Mcp: ChilkatMcp;
    JsonObject: JsonDoc;
    Socket: SocketSettings;
  }
  const objArg = <C extends Obj['cls']>(
    args: unknown[],
    call: HostCall,
    n: number,
    fname: string,
    cls: C,
  ): ByClass[C] => {
    const v = args[n + 1] as { __chilkat?: unknown } | undefined;
    const id = v && typeof v === 'object' ? v.__chilkat : undefined;
    const o = typeof id === 'number' ? objects.get(id) : undefined;
    if (!o || o.cls !== cls) {
      const got =
        o !== undefined
          ? `chilkat.${o.cls}`
          : typeof id === 'number' && disposed.has(id)
            ? 'a disposed object'
            : luaTypeName(call.typeOf(n + 2));
      throw new LuaArgumentError(
        `bad argument #${n} to '${fname}' (chilkat.${cls} expected, got ${got})`,
      );
    }
    return o.v as ByClass[C];
  };

  const strArg = (args: unknown[], call: HostCall, n: number, fname: string): string => {
    const v = args[n + 1];
    if (typeof v === 'string' && call.typeOf(n + 2) === LuaType.String) return v;
    if (call.typeOf(n + 2) === LuaType.Number) return String(v);
    throw new LuaArgumentError(
      `bad argument #${n} to '${fname}' (string expected, got ${gotName(call, n)})`,
    );
  };

  const intArg = (args: unknown[], call: HostCall, n: number, fname: string): number => {
    const v = args[n + 1];
    if (typeof v !== 'number' || call.typeOf(n + 2) !== LuaType.Number)
      throw new LuaArgumentError(
        `bad argument #${n} to '${fname}' (number expected, got ${gotName(call, n)})`,
      );
    if (!Number.isInteger(v))
      throw new LuaArgumentError(
        `bad argument #${n} to '${fname}' (number has no integer representation)`,
      );
    if (Math.abs(v) > 2 ** 31 - 1)
      throw new LuaArgumentError(`bad argument #${n} to '${fname}' (integer out of range)`);
    return v;
  };

  const boolArg = (args: unknown[], call: HostCall, n: number, fname: string): boolean => {
    const v = args[n + 1];
    if (typeof v === 'boolean') return v;
    throw new LuaArgumentError(
      `bad argument #${n} to '${fname}' (boolean expected, got ${gotName(call, n)})`,
    );
  };

  const fail = (text: string) => new LuaMulti([undefined, text]);

  const jsonMethod = (doc: JsonDoc, name: string, args: unknown[], call: HostCall): unknown => {
    const path = () => strArg(args, call, 1, name);
    const ok = (text: string) => {
      doc.lastMethodSuccess = true;
      doc.lastErrorText = `${name}: Success`;
      return text;
    };
    const failed = (text: string) => {
      doc.lastMethodSuccess = false;
      doc.lastErrorText = `${name}: ${text}`;
      return fail(doc.lastErrorText);
    };
    const update = (v: Json) => {
      const at = path();
      return doc.set(at, v) ? (ok(''), true) : failed(`cannot create the path '${at}'`);
    };
    switch (name) {
      case 'load': {
        const problem = doc.load(strArg(args, call, 1, name));
        return problem ? failed(problem) : (ok(''), true);
      }
      case 'emit':
        return doc.emit();
      case 'string_of':
        return doc.stringOf(path());
      case 'int_of':
        return doc.intOf(path());
      case 'bool_of':
        return doc.boolOf(path());
      case 'has_member':
        return doc.get(path()) !== undefined;
      case 'size_of_array':
        return doc.sizeOfArray(path());
      case 'update_string':
        return update(strArg(args, call, 2, name));
      case 'update_int':
        return update(intArg(args, call, 2, name));
      case 'update_bool':
        return update(boolArg(args, call, 2, name));
      case 'update_null':
        return update(null);
      case 'update_new_object':
        return update({});
      case 'update_new_array':
        return update([]);
      case 'append_string':
        doc.append(path(), strArg(args, call, 2, name));
        return true;
      case 'append_int':
        doc.append(path(), intArg(args, call, 2, name));
        return true;
      case 'append_bool':
        doc.append(path(), boolArg(args, call, 2, name));
        return true;
      case 'delete':
        return doc.delete(path());
      case 'name_at':
        return doc.nameAt(intArg(args, call, 1, name));
      case 'string_at':
        return doc.stringAt(intArg(args, call, 1, name));
      case 'type_at':
        return doc.typeAt(intArg(args, call, 1, name));
    }
    throw new LuaArgumentError(`chilkat.JsonObject has no method '${name}'`);
  };

  /** Starts an Mcp method that waits; returns the wait key. */
  const mcpAsync = (m: ChilkatMcp, name: string, args: unknown[], call: HostCall): number => {
    let run: () => Promise<Outcome>;
    const into = (doc: JsonDoc) => (o: Outcome) => {
      if (o.kind === 'ok') {
        doc.root = (o.values[0] ?? {}) as never;
        return { kind: 'ok', values: [true] } as Outcome;
      }
      return o;
    };
    switch (name) {
      case 'connect': {
        const url = strArg(args, call, 1, name);
        run = () => m.connect(url);
        break;
      }
      case 'list_tools':
      case 'list_resources':
      case 'list_prompts': {
        const doc = objArg(args, call, 1, name, 'JsonObject');
        const method = name;
        run = () =>
          m
            .request(pascal(method), (c, o) =>
              method === 'list_tools'
                ? c.listTools(undefined, o)
                : method === 'list_prompts'
                  ? c.listPrompts(undefined, o)
                  : c.listResources(undefined, o),
            )
            .then(into(doc));
        break;
      }
      case 'call_tool': {
        const tool = strArg(args, call, 1, name);
        const input = objArg(args, call, 2, name, 'JsonObject');
        const out = objArg(args, call, 3, name, 'JsonObject');
        const params = structuredClone(input.root);
        run = () =>
          m
            .request('CallTool', (c, o) => c.callTool({ name: tool, arguments: params }, o))
            .then(into(out));
        break;
      }
      case 'read_resource': {
        const uri = strArg(args, call, 1, name);
        const out = objArg(args, call, 2, name, 'JsonObject');
        run = () => m.request('ReadResource', (c, o) => c.readResource({ uri }, o)).then(into(out));
        break;
      }
      case 'get_prompt': {
        const prompt = strArg(args, call, 1, name);
        const input = objArg(args, call, 2, name, 'JsonObject');
        const out = objArg(args, call, 3, name, 'JsonObject');
        const params = Object.fromEntries(
          Object.entries(input.root).map(([k, v]) => [
            k,
            typeof v === 'string' ? v : JSON.stringify(v),
          ]),
        );
        run = () =>
          m
            .request('GetPrompt', (c, o) => c.getPrompt({ name: prompt, arguments: params }, o))
            .then(into(out));
        break;
      }
      case 'close':
        run = () => m.close();
        break;
      default:
        throw new LuaArgumentError(`chilkat.Mcp has no method '${name}'`);
    }
    const key = nextId++;
    waits.set(key, run());
    return key;
  };

  const mcpSync = (m: ChilkatMcp, name: string, args: unknown[], call: HostCall): unknown => {
    switch (name) {
      case 'get_last_json_data': {
        const doc = objArg(args, call, 1, name, 'JsonObject');
        doc.root = structuredClone((m.lastJson ?? {}) as never);
        return true;
      }
      case 'set_connection_settings': {
        const s = objArg(args, call, 1, name, 'Socket');
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
    return mcpAsync(m, name, args, call);
  };

  const free = (id: number, mark: boolean): void => {
    const o = objects.get(id);
    if (!o) return;
    objects.delete(id);
    if (mark) disposed.set(id, o.cls);
    if (o.cls === 'Mcp') {
      o.v.release();
      for (const ref of Object.values(o.v.events)) if (ref !== undefined) state.unref(ref);
    }
  };

  const host: Record<string, HostFunctionSpec> = {
    new: {
      fn: (args) => {
        const id = nextId++;
        const cls = args[0] as Obj['cls'];
        if (cls === 'Mcp') objects.set(id, { cls, v: new ChilkatMcp(state, debugFile) });
        else if (cls === 'JsonObject') objects.set(id, { cls, v: new JsonDoc() });
        else
          objects.set(id, {
            cls: 'Socket',
            v: {
              http_proxy_hostname: '',
              http_proxy_port: 0,
              http_proxy_username: '',
              http_proxy_password: '',
              client_ip_address: '',
            },
          });
        return id;
      },
    },
    free: { fn: (args) => (free(args[0] as number, false), undefined) },
    get: {
      fn: (args) => {
        const o = lookup(args[0], 'property read');
        const name = String(args[1]);
        const def = PROPS[o.cls][name];
        if (!def) throw unknownProperty(o.cls, name);
        return def.get(o.v as never);
      },
    },
    set: {
      fn: (args, call) => {
        const o = lookup(args[0], 'property write');
        const name = String(args[1]);
        const def = PROPS[o.cls][name];
        if (!def) throw unknownProperty(o.cls, name);
        if (!def.set)
          throw new LuaArgumentError(`chilkat.${o.cls}: property '${name}' is read-only`);
        const v = args[2];
        const t = call.typeOf(3);
        const bad = (expected: string) =>
          new LuaArgumentError(
            `chilkat.${o.cls}: property '${name}' expects ${expected}, got ${luaTypeName(t)}`,
          );
        if (def.kind === 'string' && typeof v !== 'string') throw bad('a string');
        if (def.kind === 'bool' && typeof v !== 'boolean') throw bad('a boolean');
        if (def.kind === 'int') {
          if (typeof v !== 'number') throw bad('an integer');
          if (!Number.isInteger(v))
            throw new LuaArgumentError(
              `chilkat.${o.cls}: property '${name}': number has no integer representation`,
            );
          if (v < 0 || v > 2 ** 31 - 1)
            throw new LuaArgumentError(
              `chilkat.${o.cls}: property '${name}': integer out of range (0 to 2147483647)`,
            );
        }
        def.set(o.v as never, v as never);
        return undefined;
      },
    },
    invoke: {
      fn: (args, call) => {
        const name = String(args[1]);
        const o = lookup(args[0], name);
        if (name === 'dispose') {
          free(args[0] as number, true);
          return true;
        }
        if (o.cls === 'JsonObject') return jsonMethod(o.v, name, args, call);
        if (o.cls === 'Mcp') return mcpSync(o.v, name, args, call);
        throw new LuaArgumentError(`chilkat.Socket has no method '${name}'`);
      },
    },
    wait: {
      async: true,
      fn: async (args) => {
        const key = args[0] as number;
        const w = waits.get(key);
        waits.delete(key);
        if (!w) throw new LuaArgumentError('chilkat: unknown wait');
        const o = await w;
        if (o.kind === 'ok') return new LuaMulti(o.values);
        if (o.kind === 'fail') return new LuaMulti([undefined, o.err]);
        return new LuaMulti([RAISE, o.message]);
      },
    },
    events: {
      fn: (args, call) => {
        const o = lookup(args[0], 'set_event_handler');
        if (o.cls !== 'Mcp') throw new LuaArgumentError('set_event_handler: not a chilkat.Mcp');
        for (const ref of Object.values(o.v.events)) if (ref !== undefined) state.unref(ref);
        const ref = (i: number) => (call.typeOf(i) === LuaType.Function ? call.ref(i) : undefined);
        o.v.events = { abort_check: ref(2), percent_done: ref(3), progress_info: ref(4) };
        return undefined;
      },
    },
  };
  // One sync dispatcher (its argument 1 names the operation) and the async wait: two host
  // functions per state instead of one per operation keeps states that never use chilkat cheap.
  state.defineLibrary('__chilkat_host', {
    call: {
      fn: (args, call) => {
        const name = String(args[0]);
        const op = name === 'wait' ? undefined : host[name]?.fn;
        if (!op) throw new LuaArgumentError(`chilkat: unknown operation ${String(args[0])}`);
        const shifted: HostCall = {
          ...call,
          nargs: call.nargs - 1,
          typeOf: (i) => call.typeOf(i + 1),
          ref: (i) => call.ref(i + 1),
        };
        return op(args.slice(1), shifted);
      },
    },
    wait: host.wait!,
  });
}

/** Lua's name for the type of explicit argument n (stack slot n + 2, after id and method). */
function gotName(call: HostCall, n: number): string {
  return n + 2 <= call.nargs ? luaTypeName(call.typeOf(n + 2)) : 'no value';
}

function unknownProperty(cls: string, name: string): LuaArgumentError {
  if (cls === 'Socket')
    return new LuaArgumentError(
      `chilkat.Socket: unknown property '${name}' (moonhub's Socket carries only http_proxy_hostname, http_proxy_port, http_proxy_username, http_proxy_password and client_ip_address, for set_connection_settings)`,
    );
  return new LuaArgumentError(`chilkat.${cls}: unknown property or method '${name}'`);
}

function pascal(snake: string): string {
  return snake.replace(/(^|_)([a-z])/g, (_m, _u, c: string) => c.toUpperCase());
}

/** The built-in modules `require` finds besides a plugin's own files: `chilkat`. */
export function builtinModule(name: string): { source: string; chunkname: string } | undefined {
  return name === 'chilkat' ? CHILKAT_MODULE : undefined;
}
