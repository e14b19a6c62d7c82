/**
 * Loads plugins, each into a Lua state of its own, and keeps them in step with their files: a
 * change reloads just that plugin (debounced), a failed load or reload keeps the previous surface
 * and reports the error with file and line, and a deleted plugin's surface goes away.
 */
import { readFile } from 'node:fs/promises';
import { resolve, sep } from 'node:path';
import { watch, type FSWatcher } from 'chokidar';
import type { Logger } from '../log.js';
import { LuaState } from '../lua/state.js';
import { LuaError } from '../lua/errors.js';
import type { Registry } from '../registry/registry.js';
import {
  installApi,
  endForgottenBatches,
  settleUpstreams,
  stopBackgroundTasks,
  type PluginLimits,
  type SessionViews,
} from '../lua-api/index.js';
import type { RefusalReport } from '../lua-api/inner-refusals.js';
import { discoverPlugins, locatePlugin, type PluginSource } from './discover.js';
import { chunkName, findModule } from './find-module.js';
import { IsolatedPlugin } from './isolated-plugin.js';
import { PluginWarnings } from './plugin-warnings.js';
import { WorkerPool } from './worker-pool.js';

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
  /**
   * 'worker' (default): each plugin runs on a worker thread of its own that the hub terminates
   * and restarts when a call overstays its limit; 'none': on the hub's thread (soft limits only).
   */
  isolation?: PluginIsolation;
  /** How long past its limit a call may run before its plugin's worker is terminated (500 ms). */
  hardStopGraceMs?: number;
  /**
   * Keep one plugin worker started ahead of need (default: when watching): a reload or a restart
   * takes it and only loads the plugin's code. False: every worker starts on demand (~0.3-0.5 s).
   */
  spareWorker?: boolean;
  /** Callers' contexts each plugin worker keeps (`plugins.context_table_size`; default 256). */
  contextTableSize?: number;
  /** Told of plugins' calls refused by a limit (the hub's refusal counter). */
  onRefused?: RefusalReport;
}

export type PluginIsolation = 'worker' | 'none';

/** A loaded plugin's runtime: a Lua state on this thread, or a worker thread. */
type PluginRuntime = LuaState | IsolatedPlugin;

export interface PluginStatus {
  name: string;
  entry: string;
  loaded: boolean;
  /** The last load or reload error, with file and line when Lua gave them. */
  error?: { message: string; file?: string; line?: number };
  /** What its definitions were warned about (a name too long to call, ...); plugin-warnings.ts. */
  warnings?: string[];
  loadedAt?: string;
}

interface LoadedPlugin {
  source: PluginSource;
  state: PluginRuntime | undefined;
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
  private readonly pool: WorkerPool;
  private readonly warnings = new PluginWarnings();

  constructor(opts: PluginHostOptions) {
    this.opts = opts;
    this.dirs = opts.dirs.map((d) => resolve(d));
    this.pool = new WorkerPool((opts.spareWorker ?? opts.watch !== false) ? 1 : 0, opts.logger);
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
    // Isolated plugins boot their workers all at once, then register in this order.
    const starting = new Map(
      this.isolated ? sources.map((s) => [s.name, this.startIsolated(s)] as const) : [],
    );
    for (const p of starting.values()) p.catch(() => undefined);
    await this.opts.registry.batch(async () => {
      for (const s of sources) await this.enqueue(s.name, () => this.load(s, starting.get(s.name)));
    });
    if (this.opts.watch !== false) await this.startWatching();
    this.pool.arm();
  }

  status(): PluginStatus[] {
    return [...this.plugins.values()].map((p) => {
      const warnings = this.warnings.of(p.status.name);
      return warnings === undefined ? p.status : { ...p.status, warnings };
    });
  }

  /** A registry warning about a definition of `owner` (kept in its status if it is a plugin). */
  /** Keeps a definition warning for the plugin's status; says whether to log it (plugin-warnings.ts). */
  noteWarning(owner: string, message: string): 'log' | 'last' | 'quiet' {
    return this.warnings.note(owner, message);
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
    this.pool.close();
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

  private get isolated(): boolean {
    return (this.opts.isolation ?? 'worker') === 'worker';
  }

  private async load(source: PluginSource, started?: Promise<IsolatedPlugin>): Promise<void> {
    this.warnings.begin(source.name);
    if (this.opts.reservedNames?.has(source.name)) {
      this.failed(
        source,
        new Error(
          `the name '${source.name}' belongs to upstreams.${source.name} in the config; rename the plugin or the upstream`,
        ),
        this.plugins.get(source.name),
      );
      return;
    }
    if (this.isolated) return this.loadIsolated(source, started ?? this.startIsolated(source));
    const { registry, logger } = this.opts;
    const log = logger.child({ plugin: source.name });
    const previous = this.plugins.get(source.name);
    let state: LuaState | undefined;
    const snapshot = registry.snapshotOwner(source.name);
    registry.beginBatch();
    try {
      const code = await readFile(source.entry);
      state = await LuaState.create({
        name: source.name,
        memoryLimit: this.opts.memoryLimit,
        print: (text) => log.info({ source: 'print' }, text),
        findModule: (name) => findModule(source, name),
      });
      installApi(state, {
        registry,
        owner: source.name,
        logger: log,
        root: source.folder,
        sessionViews: this.opts.sessionViews,
        settings: this.opts.settings?.[source.name],
        limits: this.opts.limits,
        onRefused: this.opts.onRefused,
      });
      registry.reset(source.name);
      const ref = state.load(code, `@${chunkName(source.entry, source)}`);
      await state.call(ref, [], { timeoutMs: this.opts.loadTimeoutMs ?? 10_000 });
      state.unref(ref);
      endForgottenBatches(state);
      void settleUpstreams(registry, source.name, state);
      this.loaded(source, state, previous);
    } catch (err) {
      if (state) endForgottenBatches(state);
      const kept = previous?.state instanceof LuaState ? previous.state : undefined;
      if (state) void settleUpstreams(registry, source.name, kept, state);
      registry.restoreOwner(source.name, snapshot);
      state?.close();
      this.failed(source, err, previous);
    } finally {
      registry.endBatch();
    }
  }

  /**
   * Loads a plugin on a worker thread of its own. Its registrations reach the registry only once
   * its top level has finished, in one batch replacing the previous generation's, so a reload
   * never leaves a window without the plugin's tools and a failed one changes nothing.
   */
  private async loadIsolated(
    source: PluginSource,
    started: Promise<IsolatedPlugin>,
  ): Promise<void> {
    const previous = this.plugins.get(source.name);
    try {
      const plugin = await started;
      plugin.activate();
      // The proxies this generation did not declare again are closed.
      void settleUpstreams(this.opts.registry, source.name, plugin);
      this.loaded(source, plugin, previous);
    } catch (err) {
      const failedBy = (err as { plugin?: object }).plugin;
      if (failedBy)
        void settleUpstreams(this.opts.registry, source.name, previous?.state, failedBy);
      this.failed(source, err, previous);
    }
  }

  private async startIsolated(source: PluginSource): Promise<IsolatedPlugin> {
    return IsolatedPlugin.start({
      registry: this.opts.registry,
      source,
      code: await readFile(source.entry),
      chunkname: `@${chunkName(source.entry, source)}`,
      logger: this.opts.logger.child({ plugin: source.name }),
      memoryLimit: this.opts.memoryLimit,
      loadTimeoutMs: this.opts.loadTimeoutMs ?? 10_000,
      graceMs: this.opts.hardStopGraceMs ?? 500,
      sessionViews: this.opts.sessionViews,
      settings: this.opts.settings?.[source.name],
      limits: this.opts.limits,
      onRefused: this.opts.onRefused,
      pool: this.pool,
      contextTableSize: this.opts.contextTableSize,
    });
  }

  private loaded(
    source: PluginSource,
    state: PluginRuntime,
    previous: LoadedPlugin | undefined,
  ): void {
    if (previous?.state) retire(previous.state);
    this.warnings.loaded(source.name);
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
    this.opts.logger
      .child({ plugin: source.name })
      .info({ entry: source.entry }, previous ? 'plugin reloaded' : 'plugin loaded');
    this.emit({ type: 'loaded', name: source.name });
  }

  private failed(source: PluginSource, err: unknown, previous: LoadedPlugin | undefined): void {
    const error = describeLoadError(err, source.entry);
    this.warnings.failed(source.name);
    const status: PluginStatus = previous
      ? { ...previous.status, error }
      : { name: source.name, entry: source.entry, loaded: false, error };
    this.plugins.set(source.name, { source, state: previous?.state, status });
    this.opts.logger.child({ plugin: source.name }).error(
      {
        entry: source.entry,
        file: error.file,
        line: error.line,
        kept_previous: Boolean(previous?.state),
      },
      `plugin failed to ${previous ? 'reload' : 'load'}: ${error.message}`,
    );
    this.emit({ type: 'failed', name: source.name, message: error.message });
  }

  private unload(name: string): void {
    const p = this.plugins.get(name);
    void settleUpstreams(this.opts.registry, name, undefined);
    this.opts.registry.reset(name);
    this.warnings.forget(name);
    if (!p) return;
    if (p.state) retire(p.state);
    this.plugins.delete(name);
    this.opts.logger.info({ plugin: name }, 'plugin removed');
    this.emit({ type: 'removed', name });
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

/**
 * Retires a replaced or removed generation: it closes once its calls in flight end, and its
 * tasks outside calls stop now (they kept it alive and acting beside its successor).
 */
function retire(state: PluginRuntime): void {
  if (state instanceof LuaState) stopBackgroundTasks(state);
  state.retire();
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
