/**
 * An upstream server's surface shown in the hub (`mcp.proxy`): its tools, prompts, resources and
 * templates registered under the owner that asked, renamed with a prefix and filtered by globs,
 * re-imported when the upstream says its lists changed. Each imported tool definition is hashed;
 * a definition that changes after import is reported, and with `pin` refused until re-approved
 * (a new `mcp.proxy(url)` call, which a plugin reload makes, approves what is there now).
 */
import type { Client } from '@modelcontextprotocol/client';
import type { Logger } from '../log.js';
import type { Registry } from '../registry/registry.js';
import type {
  CallContext,
  PromptResult,
  ResourceReadResult,
  ToolInfo,
  ToolResult,
} from '../registry/types.js';
import { globMatch } from '../registry/glob.js';
import { prepareSchemaChecks } from '../registry/schema.js';
import { UpstreamConnection } from './connection.js';
import { cancelOnly } from './connection-options.js';
import type { ProxyOptions, ProxyStatus } from './proxy-options.js';
import { UpstreamRelay } from './relay.js';
import { botsterMeta } from './botster-meta.js';
import { gatedUpstreamLog } from './log-gate.js';
import { failureResult } from '../registry/registry.js';
import { upstreamCallHookOf } from './call-hook.js';
import { DEFAULT_IMPORT_INTERVAL_MS, ImportPacer, ImportSlices } from './import-pacer.js';
import { listAll, type ListKind } from './list-pages.js';
import {
  capped,
  checkStructured,
  DEFAULT_MAX_ENTRIES,
  definitionKey,
  importedTool,
  toolResult,
  type ImportedTool,
  type UpstreamTool,
} from './proxy-tools.js';

export { toolHash, type ChangedTool } from './proxy-tools.js';

type UpstreamPrompt = Awaited<ReturnType<Client['listPrompts']>>['prompts'][number];
type UpstreamResource = Awaited<ReturnType<Client['listResources']>>['resources'][number];
type UpstreamTemplate = Awaited<
  ReturnType<Client['listResourceTemplates']>
>['resourceTemplates'][number];

export type { ProxyOptions, ProxyStatus } from './proxy-options.js';

/** Glob over upstream names: `*` any run, `?` one character (linear, no regex). */
export { globMatch };

export class UpstreamProxy {
  readonly url: string;
  readonly owner: string;
  readonly connection: UpstreamConnection;
  private opts: ProxyOptions;
  private readonly registry: Registry;
  private readonly logger: Logger;
  private readonly relay: UpstreamRelay;
  private tools = new Map<string, ImportedTool>();
  /** Each registered tool's definitionKey: a re-import registers (and compiles) only changes. */
  private registered = new Map<string, string>();
  private prompts = new Set<string>();
  private resources = new Set<string>();
  private readonly importer: ImportPacer;
  private closed = false;
  private importCostMs = 0; // the last import's hub-thread ms (ImportPacer spaces imports by it)
  /** The running stdio child's process id. */
  private pid: number | undefined;
  /** Set by the Lua binding: which Lua states declared this proxy (plugin reload bookkeeping). */
  readonly declaredBy = new Set<object>();

  constructor(registry: Registry, owner: string, url: string, opts: ProxyOptions, logger: Logger) {
    this.registry = registry;
    this.owner = owner;
    this.url = url;
    this.opts = opts;
    this.logger = logger.child({ upstream: url });
    this.importer = new ImportPacer(
      () => this.importOnce(),
      opts.importIntervalMs ?? DEFAULT_IMPORT_INTERVAL_MS,
      () => this.closed,
      () => this.importCostMs,
    );
    this.relay = new UpstreamRelay(gatedUpstreamLog(this.logger));
    this.connection = new UpstreamConnection({
      url,
      token: opts.token,
      headers: opts.headers,
      env: opts.env,
      cwd: opts.cwd,
      callTimeoutMs: opts.timeoutMs,
      connectTimeoutMs: opts.connectTimeoutMs,
      idleTimeoutMs: opts.idleTimeoutMs,
      backoffMs: opts.backoffMs,
      answerBytes: opts.answerBytes,
      pipelineDepth: opts.pipelineDepth,
      requestsPerSecond: opts.requestsPerSecond,
      requestsInFlight: opts.requestsInFlight,
      onRequestsDropped: (message) => this.logger.warn(message),
      oauth: opts.oauth,
      // applyDefaults: the SDK fills omitted fields of an accepted elicitation from the schema's
      // defaults (SEP-1034) before the answer goes upstream.
      capabilities: {
        sampling: {},
        elicitation: { form: { applyDefaults: true } },
        roots: { listChanged: false },
      },
      clientInfo: { name: `moonhub proxy (${owner})`, version: '0.1.0' },
      onAuthError: (status) =>
        this.opts.onAuthError ? this.opts.onAuthError(status) : Promise.resolve({}),
      relay: this.relay,
      onSpawn: (pid) => (this.pid = pid),
      onListChanged: () => {
        // No log line here: a flood of them would be one too (the import logs).
        void this.refreshImport(true);
      },
      onConnected: () => {
        this.logger.info({ connects: this.connection.connects }, 'upstream connected');
        void this.refreshImport();
      },
      onDisconnected: (reason) => this.logger.warn({ reason }, 'upstream unavailable'),
    });
  }

  /** Connects in the background; an unreachable upstream is retried and reported, never fatal. */
  start(): void {
    // In a turn of its own, before the lists arrive: the import then checks schemas at once.
    setImmediate(prepareSchemaChecks);
    this.connection.start();
  }

  /** Waits for the first import (or the first failure) of a fresh proxy, up to `ms`. */
  async settle(ms: number): Promise<void> {
    const deadline = Date.now() + ms;
    while (Date.now() < deadline && this.connection.state === 'connecting') {
      await new Promise((r) => setTimeout(r, 10));
    }
    await this.importer.current;
  }

  /** A second `mcp.proxy(url)`: new options, definitions approved as they are now, re-import. */
  async refresh(opts: ProxyOptions): Promise<void> {
    const oldPrefix = this.opts.prefix ?? '';
    this.opts = opts;
    if ((opts.prefix ?? '') !== oldPrefix) this.unregisterAll();
    for (const t of this.tools.values()) t.reapprove = true;
    if (this.connection.state === 'connected') await this.refreshImport();
    else this.start();
  }

  /** Imports the lists now, or joins the import running (`paced`: as list_changed asks). */
  private refreshImport(paced = false): Promise<void> {
    return this.importer.request(paced);
  }

  private async importOnce(): Promise<void> {
    try {
      await this.importAll();
    } catch (err) {
      this.logger.warn({ err: (err as Error).message }, 'could not import the upstream lists');
    }
  }

  private wanted(name: string): boolean {
    const { include, exclude } = this.opts;
    if (include && include.length > 0 && !include.some((g) => globMatch(g, name))) return false;
    if (exclude?.some((g) => globMatch(g, name))) return false;
    return true;
  }

  private async importAll(): Promise<void> {
    const caps = this.connection.sdkClient?.getServerCapabilities() ?? {};
    const max = this.opts.maxEntries ?? DEFAULT_MAX_ENTRIES;
    const list = async <T>(kind: ListKind, on: unknown) =>
      on
        ? ((await listAll(
            (run) => this.connection.request(run),
            kind,
            max,
            this.logger,
            this.connection.kind === 'stdio',
          )) as T[])
        : [];
    const tools = await list<UpstreamTool>('tools', caps.tools);
    const prompts = await list<UpstreamPrompt>('prompts', caps.prompts);
    const resources = await list<UpstreamResource>('resources', caps.resources);
    const templates = await list<UpstreamTemplate>('resourceTemplates', caps.resources);
    if (this.closed) return;
    const cap = <T>(items: T[], kind: string) => capped(items, max, kind, this.logger);
    const prefix = this.opts.prefix ?? '';
    const registry = this.registry;
    // One batch: clients see one list change for the whole import.
    registry.beginBatch();
    const slices = new ImportSlices();
    try {
      if (!(await this.importTools(cap(tools, 'tools'), prefix, slices))) return;
      this.importPrompts(cap(prompts, 'prompts'), prefix);
      this.importResources(cap(resources, 'resources'), cap(templates, 'resource templates'));
    } finally {
      registry.endBatch();
      this.importCostMs = slices.end();
    }
    this.logger.info(
      { tools: this.tools.size, prompts: this.prompts.size, resources: this.resources.size },
      'upstream imported',
    );
  }

  /** Registers the wanted tools (approved or drifted) in slices, drops the gone; false: cut off. */
  private async importTools(
    tools: UpstreamTool[],
    prefix: string,
    slices: ImportSlices,
  ): Promise<boolean> {
    const seenTools = new Set<string>();
    const opts = this.opts;
    for (const t of tools) {
      if (slices.due()) {
        await slices.yield();
        // Closed, or a refresh changed the options: the import it asked for follows this one.
        if (this.closed || this.opts !== opts) return false;
      }
      if (!this.wanted(t.name)) continue;
      const name = prefix + t.name;
      seenTools.add(name);
      const shown = importedTool(this.tools, name, t, this.opts.pin === true, this.logger);
      const key = definitionKey(shown, t.name, this.opts.timeoutMs);
      // Unchanged since the last import (registered, or refused: `!`): nothing to compile again.
      const prior = this.registered.get(name);
      if (prior === `!${key}`) {
        this.tools.delete(name);
        continue;
      }
      if (prior === key && this.registry.getTool(name)?.owner === this.owner) continue;
      this.registered.set(name, this.registerTool(shown.info, t.name) ? key : `!${key}`);
    }
    for (const name of [...this.tools.keys()]) {
      if (!seenTools.has(name)) {
        this.tools.delete(name);
        this.registry.removeTool(name, this.owner);
      }
    }
    for (const name of [...this.registered.keys()])
      if (!seenTools.has(name)) this.registered.delete(name);
    return true;
  }

  private importPrompts(prompts: UpstreamPrompt[], prefix: string): void {
    const { registry, owner } = this;
    const seenPrompts = new Set<string>();
    for (const p of prompts) {
      if (!this.wanted(p.name)) continue;
      const name = prefix + p.name;
      seenPrompts.add(name);
      const upstreamName = p.name;
      registry.addPrompt(owner, {
        name,
        title: p.title,
        description: p.description ?? '',
        arguments: (p.arguments ?? []).map((a) => ({
          name: a.name,
          description: a.description,
          required: a.required,
        })),
        handler: (args, ctx) => this.getPrompt(upstreamName, args, ctx),
      });
    }
    for (const name of this.prompts) if (!seenPrompts.has(name)) registry.removePrompt(name, owner);
    this.prompts = seenPrompts;
  }

  private importResources(resources: UpstreamResource[], templates: UpstreamTemplate[]): void {
    const { registry, owner } = this;
    const seenResources = new Set<string>();
    // A fixed resource is registered as a template without variables.
    const entries = [...resources.map((r) => ({ ...r, uriTemplate: r.uri })), ...templates];
    for (const e of entries) {
      if (!this.wanted(e.uriTemplate) && !this.wanted(e.name)) continue;
      seenResources.add(e.uriTemplate);
      registry.addResource(owner, {
        uriTemplate: e.uriTemplate,
        name: e.name,
        title: e.title,
        description: e.description,
        mimeType: e.mimeType,
        handler: (uri, _params, ctx) => this.readResource(uri, ctx),
      });
    }
    for (const uri of this.resources)
      if (!seenResources.has(uri)) registry.removeResource(uri, owner);
    this.resources = seenResources;
  }

  private registerTool(info: ToolInfo, upstreamName: string): boolean {
    const name = info.name;
    try {
      // Compiled at the tool's first call: an import of thousands of new schemas held the hub.
      this.registry.addTool(
        this.owner,
        {
          ...info,
          timeoutMs: this.opts.timeoutMs,
          handler: (args, ctx) => this.callTool(name, upstreamName, args, ctx),
        },
        { validation: 'deferred' },
      );
    } catch (err) {
      // An upstream schema our validator cannot compile: keep the tool out, say why.
      this.logger.warn(
        { tool: name, err: (err as Error).message },
        'upstream tool skipped: its input schema does not compile',
      );
      this.tools.delete(name);
      return false;
    }
    return true;
  }

  private async callTool(
    name: string,
    upstreamName: string,
    args: Record<string, unknown>,
    ctx: CallContext,
  ): Promise<ToolResult> {
    const tool = this.tools.get(name);
    const changed = tool?.changed;
    if (changed?.refused) {
      return {
        isError: true,
        content: [
          {
            type: 'text',
            text: `Tool '${name}' is pinned and its upstream definition changed since it was approved; it is refused until re-approved (reload the plugin that proxies ${this.url}).`,
          },
        ],
      };
    }
    let input = args;
    if (this.opts.transformArguments) {
      const replaced = await this.opts.transformArguments(name, args, ctx);
      if (replaced) input = replaced;
    }
    // The context carries what the call needs: the caller's signal and its peer (progress).
    const tracked = this.relay.track(ctx);
    try {
      const botster = this.opts.forwardContext === false ? undefined : botsterMeta(ctx);
      const call = (meta?: Record<string, string>) => {
        const all: Record<string, unknown> | undefined =
          botster === undefined ? meta : { ...meta, botster };
        return this.connection.call(
          'tools/call',
          all === undefined
            ? { name: upstreamName, arguments: input }
            : { name: upstreamName, arguments: input, _meta: all },
          ctx,
          tool?.direct !== false,
          tool?.definition,
        );
      };
      // observe: metrics and the trace span of the upstream call, when the hub watches them.
      const hook = upstreamCallHookOf(this.registry);
      const result = await (hook === undefined
        ? call()
        : hook(
            { url: this.url, owner: this.owner, method: 'tools/call', name: upstreamName },
            call,
          ));
      if (tool !== undefined) checkStructured(tool, upstreamName, result);
      return toolResult(result);
    } catch (err) {
      return failureResult(`upstream ${this.url} failed: ${(err as Error).message}`);
    } finally {
      this.relay.untrack(tracked, ctx);
    }
  }

  private getPrompt(
    upstreamName: string,
    args: Record<string, string>,
    ctx: CallContext,
  ): Promise<PromptResult> {
    return this.relayed(ctx, async () => {
      const params = { name: upstreamName, arguments: args };
      const r = await this.connection.call('prompts/get', params, cancelOnly(ctx));
      const out: PromptResult = { messages: r.messages as PromptResult['messages'] };
      if (typeof r.description === 'string') out.description = r.description;
      return out;
    });
  }

  private readResource(uri: string, ctx: CallContext): Promise<ResourceReadResult> {
    return this.relayed(ctx, async () => {
      const r = await this.connection.call('resources/read', { uri }, cancelOnly(ctx));
      return { contents: r.contents as ResourceReadResult['contents'] };
    });
  }

  /** Runs a request to the upstream with the caller's relay (its notices back to the caller). */
  private async relayed<T>(ctx: CallContext, run: () => Promise<T>): Promise<T> {
    const tracked = this.relay.track(ctx);
    try {
      return await run();
    } finally {
      this.relay.untrack(tracked, ctx);
    }
  }

  private unregisterAll(): void {
    const { registry, owner } = this;
    registry.beginBatch();
    try {
      for (const name of this.tools.keys()) registry.removeTool(name, owner);
      for (const name of this.prompts) registry.removePrompt(name, owner);
      for (const uri of this.resources) registry.removeResource(uri, owner);
    } finally {
      registry.endBatch();
    }
    this.tools.clear();
    this.registered.clear();
    this.prompts.clear();
    this.resources.clear();
  }

  /** Removes what was imported and closes the connection (a stdio child is killed). */
  async close(): Promise<void> {
    this.closed = true;
    this.unregisterAll();
    await this.connection.close();
  }

  status(): ProxyStatus {
    const out: ProxyStatus = {
      url: this.url,
      owner: this.owner,
      prefix: this.opts.prefix ?? '',
      state: this.connection.state,
      connects: this.connection.connects,
      tools: this.tools.size,
      prompts: this.prompts.size,
      resources: this.resources.size,
      changed: [...this.tools.values()].flatMap((t) => (t.changed ? [t.changed] : [])),
    };
    if (this.connection.lastError) out.error = this.connection.lastError;
    if (this.pid !== undefined && this.connection.state === 'connected') out.pid = this.pid;
    return out;
  }
}
