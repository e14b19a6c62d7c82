/**
 * Loads plugins, each into a Lua state of its own, and keeps them in step with their files: a
 * change reloads just that plugin (debounced), a failed load or reload keeps the previous surface
 * and reports the error with file and line, and a deleted plugin's surface goes away.
 */
import { readFileSync, realpathSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { basename, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { watch, type FSWatcher } from 'chokidar';
import type { Logger } from '../log.js';
import { LuaState } from '../lua/state.js';
import { LuaError } from '../lua/errors.js';
import type { Registry } from '../registry/registry.js';
import {
  installApi,
  endForgottenBatches,
  settleUpstreams,
  builtinModule,
  type PluginLimits,
  type SessionViews,
} from '../lua-api/index.js';
import { discoverPlugins, locatePlugin, type PluginSource } from './discover.js';

export interface PluginHostOptions {
  registry: Registry;
  dirs: string[];
  logger: Logger;
  /** Reload plugins when their files change (default true). */
  watch?: boolean;
  /** Quiet time after the last file event before reloading (default 100 ms). */
  debounceMs?: number;
  /** Memory ceiling of each plugin state. */
  memoryLimit?: number;
  /** Time limit for a plugin's top-level chunk (default 10 s). */
  loadTimeoutMs?: number;
  /** Sessions' views, for `mcp.list_tools(session_uuid)`. */
  sessionViews?: SessionViews;
  /** Each plugin's settings (`plugins.settings` in the config), by plugin name. */
  settings?: Readonly<Record<string, Readonly<Record<string, unknown>>>>;
  /** Names a plugin may not have: the config's upstreams own them (and their scoping). */
  reservedNames?: ReadonlySet<string>;
  /** Each plugin's bounds (config plugin_limits; defaults for the rest). */
  limits?: Partial<PluginLimits>;
}

export interface PluginStatus {
  name: string;
  entry: string;
  loaded: boolean;
  /** The last load or reload error, with file and line when Lua gave them. */
  error?: { message: string; file?: string; line?: number };
  loadedAt?: string;
}

interface LoadedPlugin {
  source: PluginSource;
  state: LuaState | undefined;
  status: PluginStatus;
}

/** Events tests and the status tool can wait on. */
export type PluginEvent =
  | { type: 'loaded'; name: string }
  | { type: 'failed'; name: string; message: string }
  | { type: 'removed'; name: string };

export class PluginHost {
  private readonly plugins = new Map<string, LoadedPlugin>();
  private readonly timers = new Map<string, NodeJS.Timeout>();
  private readonly queues = new Map<string, Promise<void>>();
  private watcher: FSWatcher | undefined;
  private readonly listeners = new Set<(e: PluginEvent) => void>();
  private readonly opts: PluginHostOptions;
  private readonly dirs: string[];

  constructor(opts: PluginHostOptions) {
    this.opts = opts;
    this.dirs = opts.dirs.map((d) => resolve(d));
  }

  onEvent(listener: (e: PluginEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private emit(e: PluginEvent): void {
    for (const l of this.listeners) l(e);
  }

  /** Loads every plugin found, in one registry batch, then starts watching. */
  async start(): Promise<void> {
    const sources: PluginSource[] = [];
    for (const dir of this.dirs) {
      for (const s of discoverPlugins(dir)) {
        if (sources.some((o) => o.name === s.name)) {
          this.opts.logger.warn(
            { plugin: s.name, entry: s.entry },
            'a plugin of this name was already loaded from an earlier directory; skipped',
          );
          continue;
        }
        sources.push(s);
      }
    }
    await this.opts.registry.batch(async () => {
      for (const s of sources) await this.enqueue(s.name, () => this.load(s));
    });
    if (this.opts.watch !== false) await this.startWatching();
  }

  status(): PluginStatus[] {
    return [...this.plugins.values()].map((p) => p.status);
  }

  /** Bytes of Lua memory each loaded plugin's state holds (metrics, the dashboard). */
  memoryUsage(): Map<string, number> {
    const out = new Map<string, number>();
    for (const [name, p] of this.plugins) if (p.state) out.set(name, p.state.memoryUsed);
    return out;
  }

  /** Reloads one plugin from its file now (the dashboard's approve action); false if unknown. */
  async reload(name: string): Promise<boolean> {
    const p = this.plugins.get(name);
    if (p === undefined) return false;
    await this.enqueue(name, () => this.refresh(p.source.dir, name));
    return true;
  }

  async stop(): Promise<void> {
    for (const t of this.timers.values()) clearTimeout(t);
    this.timers.clear();
    await this.watcher?.close();
    this.watcher = undefined;
    await Promise.allSettled([...this.queues.values()]);
    for (const p of this.plugins.values()) p.state?.close();
  }

  // ---- loading -------------------------------------------------------------------------------

  /** Runs plugin operations one at a time per plugin. */
  private enqueue(name: string, op: () => Promise<void>): Promise<void> {
    const prev = this.queues.get(name) ?? Promise.resolve();
    const next = prev.then(op, op);
    this.queues.set(name, next);
    void next.finally(() => {
      if (this.queues.get(name) === next) this.queues.delete(name);
    });
    return next;
  }

  /**
   * A file's name as Lua errors show it: relative to its plugins directory (`notes/init.lua`),
   * never the absolute path on the hub's disk, since these errors reach clients.
   */
  private chunkName(file: string): string {
    const dir = this.dirs.find((d) => file.startsWith(d + sep));
    const rel = dir === undefined ? '' : relative(dir, file);
    return rel && !rel.startsWith('..') && !isAbsolute(rel) ? rel : basename(file);
  }

  private async load(source: PluginSource): Promise<void> {
    const { registry, logger } = this.opts;
    const log = logger.child({ plugin: source.name });
    const previous = this.plugins.get(source.name);
    let state: LuaState | undefined;
    const snapshot = registry.snapshotOwner(source.name);
    registry.beginBatch();
    try {
      if (this.opts.reservedNames?.has(source.name))
        throw new Error(
          `the name '${source.name}' belongs to upstreams.${source.name} in the config; rename the plugin or the upstream`,
        );
      const code = await readFile(source.entry);
      state = await LuaState.create({
        name: source.name,
        memoryLimit: this.opts.memoryLimit,
        print: (text) => log.info({ source: 'print' }, text),
        findModule: (name) => this.findModule(source, name),
      });
      installApi(state, {
        registry,
        owner: source.name,
        logger: log,
        root: source.folder,
        sessionViews: this.opts.sessionViews,
        settings: this.opts.settings?.[source.name],
        limits: this.opts.limits,
      });
      registry.reset(source.name);
      const ref = state.load(code, `@${this.chunkName(source.entry)}`);
      await state.call(ref, [], { timeoutMs: this.opts.loadTimeoutMs ?? 10_000 });
      state.unref(ref);
      endForgottenBatches(state);
      void settleUpstreams(registry, source.name, state);
      previous?.state?.retire();
      this.plugins.set(source.name, {
        source,
        state,
        status: {
          name: source.name,
          entry: source.entry,
          loaded: true,
          loadedAt: new Date().toISOString(),
        },
      });
      log.info({ entry: source.entry }, previous ? 'plugin reloaded' : 'plugin loaded');
      this.emit({ type: 'loaded', name: source.name });
    } catch (err) {
      if (state) endForgottenBatches(state);
      if (state) void settleUpstreams(registry, source.name, previous?.state, state);
      registry.restoreOwner(source.name, snapshot);
      state?.close();
      const error = describeLoadError(err, source.entry);
      const status: PluginStatus = previous
        ? { ...previous.status, error }
        : { name: source.name, entry: source.entry, loaded: false, error };
      this.plugins.set(source.name, { source, state: previous?.state, status });
      log.error(
        {
          entry: source.entry,
          file: error.file,
          line: error.line,
          kept_previous: Boolean(previous?.state),
        },
        `plugin failed to ${previous ? 'reload' : 'load'}: ${error.message}`,
      );
      this.emit({ type: 'failed', name: source.name, message: error.message });
    } finally {
      registry.endBatch();
    }
  }

  private unload(name: string): void {
    const p = this.plugins.get(name);
    void settleUpstreams(this.opts.registry, name, undefined);
    this.opts.registry.reset(name);
    if (!p) return;
    p.state?.retire();
    this.plugins.delete(name);
    this.opts.logger.info({ plugin: name }, 'plugin removed');
    this.emit({ type: 'removed', name });
  }

  /** `require` inside a plugin: modules from its own folder only, never a path out of it. */
  private findModule(
    source: PluginSource,
    name: string,
  ): { source: Uint8Array | string; chunkname: string } | string {
    const builtin = builtinModule(name);
    if (builtin) return builtin;
    if (!source.folder) {
      return `module '${name}' not found: a single-file plugin can only require built-in modules (make the plugin a folder with init.lua to add modules)`;
    }
    if (!/^[A-Za-z0-9_]+(\.[A-Za-z0-9_]+)*$/.test(name)) {
      return `module '${name}' not found: module names are dotted identifiers inside the plugin's folder`;
    }
    const rel = name.split('.').join(sep);
    let root: string;
    try {
      root = realpathSync(source.folder);
    } catch {
      return `module '${name}' not found: the plugin folder is gone`;
    }
    const tried: string[] = [];
    for (const candidate of [
      join(source.folder, `${rel}.lua`),
      join(source.folder, rel, 'init.lua'),
    ]) {
      tried.push(this.chunkName(candidate));
      let real: string;
      try {
        real = realpathSync(candidate);
      } catch {
        continue;
      }
      if (real !== root && !real.startsWith(root + sep)) {
        return `module '${name}' not found: ${this.chunkName(candidate)} leads outside the plugin's folder`;
      }
      return { source: readFileSync(real), chunkname: this.chunkName(candidate) };
    }
    return `module '${name}' not found:\n\tno file '${tried.join("'\n\tno file '")}'`;
  }

  // ---- watching ------------------------------------------------------------------------------

  private async startWatching(): Promise<void> {
    this.watcher = watch(this.dirs, {
      ignoreInitial: true,
      depth: 8,
      atomic: true,
      awaitWriteFinish: false,
      // A folder plugin's tmp/ is its scratch space (vfs.write): writing there is not an edit.
      ignored: (path: string) => this.inPluginTmp(path),
    });
    const onPath = (path: string) => this.onFileEvent(path);
    this.watcher
      .on('add', onPath)
      .on('change', onPath)
      .on('unlink', onPath)
      .on('unlinkDir', onPath)
      .on('addDir', onPath);
    this.watcher.on('error', (err) => this.opts.logger.warn({ err }, 'file watcher error'));
    await new Promise<void>((resolveReady) => this.watcher?.once('ready', () => resolveReady()));
  }

  private inPluginTmp(path: string): boolean {
    const abs = resolve(path);
    const dir = this.dirs.find((d) => abs.startsWith(d + sep));
    if (dir === undefined) return false;
    const parts = abs.slice(dir.length + 1).split(sep);
    return parts.length >= 2 && parts[1] === 'tmp';
  }

  private onFileEvent(path: string): void {
    const abs = resolve(path);
    const dir = this.dirs.find((d) => abs.startsWith(d + sep));
    if (!dir) return;
    const first = abs.slice(dir.length + 1).split(sep)[0] ?? '';
    const name = first.endsWith('.lua') ? first.slice(0, -4) : first;
    if (!name) return;
    const existing = this.timers.get(name);
    if (existing) clearTimeout(existing);
    this.timers.set(
      name,
      setTimeout(() => {
        this.timers.delete(name);
        void this.enqueue(name, () => this.refresh(dir, name));
      }, this.opts.debounceMs ?? 100),
    );
  }

  private async refresh(dir: string, name: string): Promise<void> {
    const source = locatePlugin(dir, name);
    if (source) await this.load(source);
    else if (this.plugins.get(name)?.source.dir === dir) this.unload(name);
  }
}

function describeLoadError(
  err: unknown,
  entry: string,
): { message: string; file?: string; line?: number } {
  const message = err instanceof Error ? err.message : String(err);
  if (err instanceof LuaError) {
    const m = /^([^\n:]+\.lua):(\d+):/.exec(message);
    if (m) return { message, file: m[1], line: Number(m[2]) };
  }
  return { message, file: entry };
}
