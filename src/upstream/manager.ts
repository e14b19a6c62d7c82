/**
 * Every upstream proxy of one hub (one registry), keyed by owner and address: what `mcp.proxy`
 * creates and refreshes, what a plugin reload or removal retires, what the hub closes when it
 * stops, and what `hub_status` reports.
 */
import type { Logger } from '../log.js';
import type { Registry } from '../registry/registry.js';
import type { UpstreamProxy, ProxyOptions, ProxyStatus } from './proxy.js';
import type * as ProxyModule from './proxy.js';

/**
 * The proxy and the SDK client beneath it are loaded with the first proxy: a hub or plugin worker
 * that proxies nothing never loads them (~150 modules, the SDK and zod; docs/performance.md,
 * "Start-up").
 */
let proxyModule: typeof ProxyModule | undefined;
let loading: Promise<typeof ProxyModule> | undefined;
function loadProxy(): Promise<typeof ProxyModule> {
  return (loading ??= import('./proxy.js').then((m) => (proxyModule = m)));
}

/**
 * Waits for a first proxy whose module is still loading to be entered: settling an owner or
 * stopping must see it. One promise, so its waiters resume in order, `proxy()`'s first.
 */
async function proxiesEntered(): Promise<void> {
  if (proxyModule === undefined && loading !== undefined) await loading.catch(() => undefined);
}

export class UpstreamManager {
  private readonly proxies = new Map<string, UpstreamProxy>();
  private readonly registry: Registry;

  constructor(registry: Registry) {
    this.registry = registry;
  }

  private key(owner: string, url: string): string {
    return `${owner}\n${url}`;
  }

  get(owner: string, url: string): UpstreamProxy | undefined {
    return this.proxies.get(this.key(owner, url));
  }

  /** How many proxies `owner` holds (a plugin's bound on them is checked against this). */
  countOwned(owner: string): number {
    let n = 0;
    for (const p of this.proxies.values()) if (p.owner === owner) n++;
    return n;
  }

  /**
   * Creates the proxy and starts it, or refreshes the one `owner` already has for `url`.
   * `logger` is the owner's (it names the plugin).
   */
  async proxy(
    owner: string,
    url: string,
    opts: ProxyOptions,
    declaredBy: object,
    logger: Logger,
  ): Promise<UpstreamProxy> {
    // Loaded before the lookup: nothing awaits between it and the new proxy's entry.
    const { UpstreamProxy } = proxyModule ?? (await loadProxy());
    const existing = this.get(owner, url);
    if (existing) {
      existing.declaredBy.add(declaredBy);
      await existing.refresh(opts);
      return existing;
    }
    const proxy = new UpstreamProxy(this.registry, owner, url, opts, logger);
    proxy.declaredBy.add(declaredBy);
    this.proxies.set(this.key(owner, url), proxy);
    proxy.start();
    return proxy;
  }

  async remove(owner: string, url: string): Promise<boolean> {
    await proxiesEntered();
    const proxy = this.get(owner, url);
    if (!proxy) return false;
    this.proxies.delete(this.key(owner, url));
    await proxy.close();
    return true;
  }

  /**
   * After a plugin (re)load: `kept` is the state now serving `owner`, `failed` one whose load
   * failed. Proxies the serving state did not declare are closed.
   */
  async settleOwner(owner: string, kept: object | undefined, failed?: object): Promise<void> {
    await proxiesEntered();
    const closing: Promise<void>[] = [];
    for (const proxy of [...this.proxies.values()]) {
      if (proxy.owner !== owner) continue;
      if (failed) proxy.declaredBy.delete(failed);
      if (kept && proxy.declaredBy.has(kept)) {
        proxy.declaredBy.clear();
        proxy.declaredBy.add(kept);
        continue;
      }
      if (failed && proxy.declaredBy.size > 0) continue;
      this.proxies.delete(this.key(owner, proxy.url));
      closing.push(proxy.close());
    }
    await Promise.allSettled(closing);
  }

  status(): ProxyStatus[] {
    return [...this.proxies.values()].map((p) => p.status());
  }

  async stop(): Promise<void> {
    await proxiesEntered();
    const all = [...this.proxies.values()];
    this.proxies.clear();
    await Promise.allSettled(all.map((p) => p.close()));
  }
}

const managers = new WeakMap<Registry, UpstreamManager>();

/** The upstream manager of the hub that owns `registry` (made on first use). */
export function upstreamsOf(registry: Registry): UpstreamManager {
  let m = managers.get(registry);
  if (!m) {
    m = new UpstreamManager(registry);
    managers.set(registry, m);
  }
  return m;
}

/**
 * Puts `manager` behind `registry`: a plugin worker's registry gets one that asks the hub's
 * thread, where the upstream connections live (plugins/remote-upstreams.ts).
 */
export function useUpstreams(registry: Registry, manager: UpstreamManager): void {
  managers.set(registry, manager);
}
