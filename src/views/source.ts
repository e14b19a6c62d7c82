/**
 * The scoping half of the config, kept current while the hub runs: targets, agents and the agent
 * manifests they name. The config file and the manifests are watched (chokidar); a valid edit
 * replaces what was there and tells the listeners, a broken one is logged and changes nothing.
 */
import { isDeepStrictEqual } from 'node:util';
import { watch, type FSWatcher } from 'chokidar';
import type { Logger } from '../log.js';
import { loadConfig, type HubConfig } from '../config/config.js';
import { loadDataFile } from '../config/validate.js';
import type { Manifest } from './scope.js';

export type ScopeConfig = Pick<HubConfig, 'targets' | 'agents'>;

export interface ScopeSourceOptions {
  config: HubConfig;
  /** The config file to watch (absolute); none when the hub runs without one. */
  configFile?: string | undefined;
  logger: Logger;
  /** Watch the files (default true). */
  watch?: boolean;
  debounceMs?: number;
}

export function loadManifest(file: string): Manifest {
  return loadDataFile(file, 'manifest.schema.json', 'agent manifest') as Manifest;
}

/** Settings whose change needs a restart; an edit of them is logged, not applied. */
const RESTART_KEYS = ['hub_id', 'public_url', 'listen', 'plugins', 'auth', 'execute'] as const;

export class ScopeSource {
  private current: ScopeConfig;
  private whole: HubConfig;
  private readonly manifests = new Map<string, Manifest>();
  private readonly listeners = new Set<() => void>();
  private readonly timers = new Map<string, NodeJS.Timeout>();
  private watcher: FSWatcher | undefined;

  private constructor(private readonly opts: ScopeSourceOptions) {
    this.whole = opts.config;
    this.current = { targets: opts.config.targets, agents: opts.config.agents };
  }

  /** Reads every manifest (a bad one is an error here: the hub must not start half-scoped). */
  static async open(opts: ScopeSourceOptions): Promise<ScopeSource> {
    const source = new ScopeSource(opts);
    for (const file of source.manifestFiles()) source.manifests.set(file, loadManifest(file));
    if (opts.watch !== false) await source.startWatching();
    return source;
  }

  get config(): ScopeConfig {
    return this.current;
  }

  /** The manifest of `agent`, when it has one that was read successfully. */
  manifestOf(agent: string): Manifest | undefined {
    const file = this.current.agents?.[agent]?.manifest;
    return file === undefined ? undefined : this.manifests.get(file);
  }

  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  async close(): Promise<void> {
    for (const t of this.timers.values()) clearTimeout(t);
    this.timers.clear();
    this.listeners.clear();
    await this.watcher?.close();
  }

  private manifestFiles(): Set<string> {
    const files = new Set<string>();
    for (const agent of Object.values(this.current.agents ?? {}))
      if (agent.manifest !== undefined) files.add(agent.manifest);
    return files;
  }

  private emit(): void {
    for (const listener of this.listeners) {
      try {
        listener();
      } catch (err) {
        this.opts.logger.error({ err }, 'scope change listener failed');
      }
    }
  }

  private async startWatching(): Promise<void> {
    const files = [...this.manifestFiles()];
    if (this.opts.configFile !== undefined) files.push(this.opts.configFile);
    // Nothing to watch (no config file): chokidar would never report ready.
    if (files.length === 0) return;
    this.watcher = watch(files, { ignoreInitial: true, atomic: true });
    const onPath = (path: string) => this.schedule(path);
    this.watcher.on('add', onPath).on('change', onPath).on('unlink', onPath);
    this.watcher.on('error', (err) => this.opts.logger.warn({ err }, 'file watcher error'));
    await new Promise<void>((ready) => this.watcher!.once('ready', () => ready()));
  }

  /** Editors write in several steps: act once the file has been quiet for a moment. */
  private schedule(path: string): void {
    clearTimeout(this.timers.get(path));
    this.timers.set(
      path,
      setTimeout(() => {
        this.timers.delete(path);
        if (path === this.opts.configFile) this.reloadConfig();
        else this.reloadManifest(path);
      }, this.opts.debounceMs ?? 50),
    );
  }

  private reloadManifest(file: string): void {
    if (!this.manifestFiles().has(file)) return;
    let next: Manifest;
    try {
      next = loadManifest(file);
    } catch (err) {
      this.opts.logger.error(
        { file, err: (err as Error).message },
        'agent manifest not applied: the previous version stays in force',
      );
      return;
    }
    if (isDeepStrictEqual(next, this.manifests.get(file))) return;
    this.manifests.set(file, next);
    this.opts.logger.info({ file }, 'agent manifest reloaded');
    this.emit();
  }

  private reloadConfig(): void {
    const file = this.opts.configFile!;
    let next: HubConfig;
    try {
      next = loadConfig(file);
    } catch (err) {
      this.opts.logger.error(
        { file, err: (err as Error).message },
        'config file not applied: the previous scoping stays in force',
      );
      return;
    }
    const restart = RESTART_KEYS.filter((k) => !isDeepStrictEqual(next[k], this.whole[k]));
    if (restart.length > 0)
      this.opts.logger.warn({ file, keys: restart }, 'config change needs a restart to apply');
    const scope: ScopeConfig = { targets: next.targets, agents: next.agents };
    if (isDeepStrictEqual(scope, this.current)) return;
    const before = this.manifestFiles();
    this.current = scope;
    this.whole = { ...this.whole, targets: next.targets, agents: next.agents };
    const after = this.manifestFiles();
    for (const f of after) {
      if (before.has(f)) continue;
      try {
        this.manifests.set(f, loadManifest(f));
      } catch (err) {
        // Its agent sees nothing until the manifest can be read (scope.ts).
        this.opts.logger.error(
          { file: f, err: (err as Error).message },
          'agent manifest unreadable',
        );
      }
      this.watcher?.add(f);
    }
    for (const f of before) {
      if (after.has(f)) continue;
      this.manifests.delete(f);
      void this.watcher?.unwatch(f);
    }
    this.opts.logger.info({ file }, 'config reloaded: targets and agents applied');
    this.emit();
  }
}
