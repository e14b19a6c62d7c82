/**
 * The binding context of `require("chilkat")` (chilkat.ts installs it): one state's chilkat
 * objects keyed by id, the ids of those disposed (for a clearer error), and the Mcp methods
 * in flight, each under a wait key the Lua side passes back to `wait`.
 */
import { LuaArgumentError } from '../lua/errors.js';
import type { HostCall, LuaState } from '../lua/state.js';
import { luaTypeName } from '../lua/wasm.js';
import { JsonDoc } from './chilkat-json.js';
import { ChilkatMcp, type Outcome } from './chilkat-mcp.js';
import type { SocketSettings } from './chilkat-props.js';

export type Obj =
  | { cls: 'Mcp'; v: ChilkatMcp }
  | { cls: 'JsonObject'; v: JsonDoc }
  | { cls: 'Socket'; v: SocketSettings };

/** An argument that must be a chilkat object of class `cls` (passed as `{__chilkat=id}`). */
interface ByClass {
  Mcp: ChilkatMcp;
  JsonObject: JsonDoc;
  Socket: SocketSettings;
}

/** Resolves a debug log VFS path to a file on disk, or explains why it cannot be written. */
export type DebugFile = (path: string) => string | { error: string };

export class ChilkatObjects {
  private readonly objects = new Map<number, Obj>();
  private readonly disposed = new Map<number, Obj['cls']>();
  private readonly waits = new Map<number, Promise<Outcome>>();
  /** Object ids and wait keys come from this one counter. */
  private nextId = 1;

  constructor(
    readonly state: LuaState,
    private readonly debugFile: DebugFile,
  ) {}

  /** A new object of class `cls` (anything but Mcp and JsonObject makes a Socket); its id. */
  create(cls: Obj['cls']): number {
    const id = this.nextId++;
    if (cls === 'Mcp') this.objects.set(id, { cls, v: new ChilkatMcp(this.state, this.debugFile) });
    else if (cls === 'JsonObject') this.objects.set(id, { cls, v: new JsonDoc() });
    else
      this.objects.set(id, {
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
  }

  /** The object behind `id`, or raises naming `what` (the operation) for Lua. */
  lookup(id: unknown, what: string): Obj {
    if (typeof id !== 'number') throw new LuaArgumentError(`${what}: not a chilkat object`);
    const o = this.objects.get(id);
    if (!o) {
      const cls = this.disposed.get(id);
      if (cls) throw new LuaArgumentError(`chilkat.${cls}: the object was disposed (${what})`);
      throw new LuaArgumentError(`${what}: not a chilkat object`);
    }
    return o;
  }

  /** Method argument n (after the object and the method name): an object of class `cls`. */
  arg<C extends Obj['cls']>(
    args: unknown[],
    call: HostCall,
    n: number,
    fname: string,
    cls: C,
  ): ByClass[C] {
    const v = args[n + 1] as { __chilkat?: unknown } | undefined;
    const id = v && typeof v === 'object' ? v.__chilkat : undefined;
    const o = typeof id === 'number' ? this.objects.get(id) : undefined;
    if (!o || o.cls !== cls) {
      const got =
        o !== undefined
          ? `chilkat.${o.cls}`
          : typeof id === 'number' && this.disposed.has(id)
            ? 'a disposed object'
            : luaTypeName(call.typeOf(n + 2));
      throw new LuaArgumentError(
        `bad argument #${n} to '${fname}' (chilkat.${cls} expected, got ${got})`,
      );
    }
    return o.v as ByClass[C];
  }

  /** Drops an object (an Mcp releases its connection and event handlers); `mark`: disposed. */
  free(id: number, mark: boolean): void {
    const o = this.objects.get(id);
    if (!o) return;
    this.objects.delete(id);
    if (mark) this.disposed.set(id, o.cls);
    if (o.cls === 'Mcp') {
      o.v.release();
      for (const ref of Object.values(o.v.events)) if (ref !== undefined) this.state.unref(ref);
    }
  }

  /** Starts a method that waits; returns the key `wait` takes. */
  startWait(run: () => Promise<Outcome>): number {
    const key = this.nextId++;
    this.waits.set(key, run());
    return key;
  }

  /** The method in flight under `key`, forgotten here (each key is waited on once). */
  takeWait(key: number): Promise<Outcome> | undefined {
    const w = this.waits.get(key);
    this.waits.delete(key);
    return w;
  }
}
