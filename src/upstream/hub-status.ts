/**
 * The `hub_status` built-in tool (owner `builtin:hub_status`): which plugins are loaded, which
 * upstreams are connected, and which imported tools changed their definition since approval.
 * Any agent that sees it may call it, so it shows no secrets and no host paths (status-redact.ts).
 */
import type { PluginStatus } from '../plugins/plugin-host.js';
import type { Registry } from '../registry/registry.js';
import { upstreamsOf } from './manager.js';
import { redactUrl, StatusRedactor } from './status-redact.js';

export const HUB_STATUS_OWNER = 'builtin:hub_status';

/** A plugin's status without the host's folders in its paths and messages. */
function pluginView(p: PluginStatus, redact: StatusRedactor): PluginStatus {
  const out: PluginStatus = { ...p, entry: redact.file(p.entry) };
  if (p.error) {
    out.error = { ...p.error, message: redact.text(p.error.message) };
    if (p.error.file !== undefined) out.error.file = redact.file(p.error.file);
  }
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
    handler: async () => {
      const upstreams = upstreamsOf(registry).status();
      const status = {
        hub_id: registry.hubId,
        plugins: plugins.status().map((p) => pluginView(p, redact)),
        upstreams: upstreams.map(({ changed: _changed, ...u }) => {
          const shown = { ...u, url: redactUrl(u.url) };
          if (u.error !== undefined) shown.error = redact.text(u.error);
          return shown;
        }),
        changed_tools: upstreams.flatMap((u) =>
          u.changed.map((c) => ({ ...c, upstream: redactUrl(u.url), owner: u.owner })),
        ),
        counts: {
          tools: registry.countTools(),
          prompts: registry.countPrompts(),
          resources: registry.countResources(),
        },
      };
      return {
        content: [{ type: 'text', text: JSON.stringify(status, null, 2) }],
        structuredContent: status,
      };
    },
  });
}
