/**
 * The `hub_status` built-in tool (owner `builtin:hub_status`): which plugins are loaded, which
 * upstreams are connected, and which imported tools changed their definition since approval.
 * Any agent that sees it may call it, so it shows no secrets and no host paths (status-redact.ts),
 * and only what lies inside the caller's view: plugins, upstreams (by the plugin that imports
 * them) and counts of the caller's visible tools, prompts and resources. It sits beside hub.ts,
 * above plugins/ and upstream/, which it reads.
 */
import type { PluginStatus } from './plugins/plugin-host.js';
import type { Registry } from './registry/registry.js';
import type { OwnerFilter } from './registry/types.js';
import { upstreamsOf } from './upstream/manager.js';
import { redactUrl, StatusRedactor } from './upstream/status-redact.js';

export const HUB_STATUS_OWNER = 'builtin:hub_status';

/** A plugin's status without the host's folders in its paths and messages. */
function pluginView(p: PluginStatus, redact: StatusRedactor): PluginStatus {
  const out: PluginStatus = { ...p, entry: redact.file(p.entry) };
  if (p.error) {
    out.error = { ...p.error, message: redact.text(p.error.message) };
    if (p.error.file !== undefined) out.error.file = redact.file(p.error.file);
  }
  if (p.warnings) out.warnings = p.warnings.map((w) => redact.text(w));
  return out;
}

export function registerHubStatus(
  registry: Registry,
  plugins: { status(): PluginStatus[] },
  pluginDirs: readonly string[] = [],
): void {
  const redact = new StatusRedactor(pluginDirs);
  registry.addTool(HUB_STATUS_OWNER, {
    name: 'hub_status',
    description:
      'What this moonhub serves: loaded plugins (and load errors), upstream MCP servers with their connection state, and imported tools whose upstream definition changed since it was approved.',
    inputSchema: { type: 'object', properties: {} },
    annotations: { readOnlyHint: true },
    handler: async (_args, ctx) => {
      const visible: (owner: string) => boolean = ctx.filter ?? (() => true);
      const upstreams = upstreamsOf(registry)
        .status()
        .filter((u) => visible(u.owner));
      const status = {
        hub_id: registry.hubId,
        plugins: plugins
          .status()
          .filter((p) => visible(p.name))
          .map((p) => pluginView(p, redact)),
        upstreams: upstreams.map(({ changed: _changed, ...u }) => {
          const shown = { ...u, url: redactUrl(u.url) };
          if (u.error !== undefined) shown.error = redact.text(u.error);
          return shown;
        }),
        changed_tools: upstreams.flatMap((u) =>
          u.changed.map((c) => ({ ...c, upstream: redactUrl(u.url), owner: u.owner })),
        ),
        counts: counts(registry, ctx.filter),
      };
      return {
        content: [{ type: 'text', text: JSON.stringify(status, null, 2) }],
        structuredContent: status,
      };
    },
  });
}

/** How many tools, prompts and resources the view `filter` holds. */
function counts(registry: Registry, filter: OwnerFilter): Record<string, number> {
  return {
    tools: registry.countTools(filter),
    prompts: registry.countPrompts(filter),
    resources: registry.countResources(filter),
  };
}
