/**
 * `mcp.proxy` in a plugin worker: the upstream connections live on the hub's thread (so proxied
 * calls never hop through the worker, and hub_status sees them); this manager asks the hub to
 * create, remove and settle them, and runs the proxy's Lua callbacks (`transform_arguments`,
 * `on_auth_error`) here when the hub asks.
 */
import type { Logger } from '../log.js';
import { UpstreamManager } from '../upstream/manager.js';
import type { ProxyOptions, UpstreamProxy } from '../upstream/proxy.js';
import type { CallContext } from '../registry/types.js';
import type { RemoteRegistry, HubLink } from './remote-registry.js';

type Callbacks = Pick<ProxyOptions, 'transformArguments' | 'onAuthError'>;

export class RemoteUpstreams extends UpstreamManager {
  private readonly callbacks = new Map<string, Callbacks>();

  constructor(
    registry: RemoteRegistry,
    private readonly link: HubLink,
  ) {
    super(registry);
  }

  override get(_owner: string, url: string): UpstreamProxy | undefined {
    return this.link.ask({ op: 'proxyExists', origin: {}, args: [url] })
      ? ({} as UpstreamProxy)
      : undefined;
  }

  override proxy(
    _owner: string,
    url: string,
    opts: ProxyOptions,
    _declaredBy: object,
    _logger: Logger,
  ): Promise<UpstreamProxy> {
    const { transformArguments, onAuthError, ...data } = opts;
    this.callbacks.set(url, { transformArguments, onAuthError });
    const connection = { state: 'connecting', lastError: undefined as string | undefined };
    const link = this.link;
    const proxy = {
      connection,
      async settle(ms: number): Promise<void> {
        const r = (await link.request(
          'proxy',
          [url, data, transformArguments !== undefined, onAuthError !== undefined, ms],
          {},
        )) as { state: string; lastError?: string };
        connection.state = r.state;
        connection.lastError = r.lastError;
      },
    };
    return Promise.resolve(proxy as unknown as UpstreamProxy);
  }

  override async remove(_owner: string, url: string): Promise<boolean> {
    this.callbacks.delete(url);
    return (await this.link.request('removeProxy', [url], {})) as boolean;
  }

  /** After a load the hub's thread settles the proxies itself; `mcp.reset(source)` asks it to. */
  override async settleOwner(
    owner: string,
    kept: object | undefined,
    failed?: object,
  ): Promise<void> {
    if (kept !== undefined || failed !== undefined) return;
    await this.link.request('settleUpstreams', [owner], {});
  }

  override async stop(): Promise<void> {
    await this.link.request('settleUpstreams', [null], {});
  }

  override status(): [] {
    return [];
  }

  /** Runs a proxy's Lua callback for the hub's thread. */
  async callback(url: string, which: 'transform' | 'auth', args: unknown[]): Promise<unknown> {
    const c = this.callbacks.get(url);
    if (which === 'transform') {
      if (!c?.transformArguments) return undefined;
      const [name, input, ctx] = args as [string, Record<string, unknown>, CallContext];
      return c.transformArguments(name, input, ctx);
    }
    if (!c?.onAuthError) return {};
    return c.onAuthError(args[0] as number);
  }
}
