/**
 * The `hub_status` built-in tool (owner `builtin:hub_status`): which plugins are loaded, which
 * upstreams are connected, and which imported tools changed their definition since approval.
 */
import type { PluginStatus } from '../plugins/plugin-host.js';
import type { Registry } from '../registry/registry.js';
import { upstreamsOf } from './manager.js';

export const HUB_STATUS_OWNER = 'builtin:hub_status';

export function registerHubStatus(registry: Registry, plugins: { status(): PluginStatus[] }): void {
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
        plugins: plugins.status(),
        upstreams: upstreams.map(({ changed: _changed, ...u }) => u),
        changed_tools: upstreams.flatMap((u) =>
          u.changed.map((c) => ({ ...c, upstream: u.url, owner: u.owner })),
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
