/**
 * `require("chilkat")` (LUA_API §4): installs the host side of `chilkat.Mcp`, `chilkat.JsonObject`
 * and `chilkat.Socket`; the Lua side is a built-in module that `require` compiles on first use
 * (see builtinModule), so states that never use it pay for two host functions. Objects live in a
 * per-state table keyed by id (chilkat-objects.ts); property reads and writes are checked here
 * (unknown name, wrong type, read-only, range), methods in chilkat-json-methods.ts and
 * chilkat-mcp-methods.ts.
 */
import { LuaArgumentError } from '../lua/errors.js';
import { LuaMulti, type HostCall, type HostFunctionSpec, type LuaState } from '../lua/state.js';
import { LuaType, luaTypeName } from '../lua/wasm.js';
import { CHILKAT_MODULE } from './chilkat-lua.js';
import { jsonMethod } from './chilkat-json-methods.js';
import { mcpMethod } from './chilkat-mcp-methods.js';
import { ChilkatObjects, type Obj } from './chilkat-objects.js';
import { PROPS } from './chilkat-props.js';
import { locate } from './vfs.js';

const RAISE = '\0chilkat:raise';

export interface ChilkatOptions {
  /** The folder behind `/source/` (for `debug_log_file_path`). */
  root?: string;
}

export function installChilkat(state: LuaState, opts: ChilkatOptions): void {
  const debugFile = (path: string): string | { error: string } => {
    if (opts.root === undefined) return { error: 'this state has no /source/ folder' };
    const where = locate(opts.root, path);
    if (typeof where === 'string') return { error: where };
    if (where.rel !== 'tmp' && !where.rel.startsWith('tmp/'))
      return { error: `${path}: read-only (only /source/tmp/ is writable)` };
    return where.disk;
  };
  const host = hostOperations(new ChilkatObjects(state, debugFile));
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

/** The operations the Lua side asks for by name: objects, properties, methods, waits, events. */
function hostOperations(objects: ChilkatObjects): Record<string, HostFunctionSpec> {
  const { state } = objects;
  return {
    new: { fn: (args) => objects.create(args[0] as Obj['cls']) },
    free: { fn: (args) => (objects.free(args[0] as number, false), undefined) },
    get: {
      fn: (args) => {
        const o = objects.lookup(args[0], 'property read');
        const name = String(args[1]);
        const def = PROPS[o.cls][name];
        if (!def) throw unknownProperty(o.cls, name);
        return def.get(o.v as never);
      },
    },
    set: {
      fn: (args, call) => {
        setProperty(objects.lookup(args[0], 'property write'), String(args[1]), args[2], call);
        return undefined;
      },
    },
    invoke: {
      fn: (args, call) => {
        const name = String(args[1]);
        const o = objects.lookup(args[0], name);
        if (name === 'dispose') {
          objects.free(args[0] as number, true);
          return true;
        }
        if (o.cls === 'JsonObject') return jsonMethod(o.v, name, args, call);
        if (o.cls === 'Mcp') return mcpMethod(objects, o.v, name, args, call);
        throw new LuaArgumentError(`chilkat.Socket has no method '${name}'`);
      },
    },
    wait: {
      async: true,
      fn: async (args) => {
        const w = objects.takeWait(args[0] as number);
        if (!w) throw new LuaArgumentError('chilkat: unknown wait');
        const o = await w;
        if (o.kind === 'ok') return new LuaMulti(o.values);
        if (o.kind === 'fail') return new LuaMulti([undefined, o.err]);
        return new LuaMulti([RAISE, o.message]);
      },
    },
    events: {
      fn: (args, call) => {
        const o = objects.lookup(args[0], 'set_event_handler');
        if (o.cls !== 'Mcp') throw new LuaArgumentError('set_event_handler: not a chilkat.Mcp');
        for (const ref of Object.values(o.v.events)) if (ref !== undefined) state.unref(ref);
        const ref = (i: number) => (call.typeOf(i) === LuaType.Function ? call.ref(i) : undefined);
        o.v.events = { abort_check: ref(2), percent_done: ref(3), progress_info: ref(4) };
        return undefined;
      },
    },
  };
}

/** Writes property `name` of `o` with `v` (stack slot 3), checked against its definition. */
function setProperty(o: Obj, name: string, v: unknown, call: HostCall): void {
  const def = PROPS[o.cls][name];
  if (!def) throw unknownProperty(o.cls, name);
  if (!def.set) throw new LuaArgumentError(`chilkat.${o.cls}: property '${name}' is read-only`);
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
}

function unknownProperty(cls: string, name: string): LuaArgumentError {
  if (cls === 'Socket')
    return new LuaArgumentError(
      `chilkat.Socket: unknown property '${name}' (moonhub's Socket carries only http_proxy_hostname, http_proxy_port, http_proxy_username, http_proxy_password and client_ip_address, for set_connection_settings)`,
    );
  return new LuaArgumentError(`chilkat.${cls}: unknown property or method '${name}'`);
}

/** The built-in modules `require` finds besides a plugin's own files: `chilkat`. */
export function builtinModule(name: string): { source: string; chunkname: string } | undefined {
  return name === 'chilkat' ? CHILKAT_MODULE : undefined;
}
