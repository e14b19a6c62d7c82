/**
 * Resource updates across processes, wired at the registry so the transports need no change:
 * `mcp.resource_updated(uri)` on one instance is published on the bus, and every other instance
 * replays it into its own registry, whose transports tell their subscribers (2026-07-28
 * `subscriptions/listen` streams and 2025 sessions held there). List changes are not relayed:
 * each process loads the same plugin files and sees their edits itself.
 */
import type { Registry } from '../registry/registry.js';
import type { MessageBus } from './bus.js';
import { onTopic, publishTopic } from './topics.js';

export function bridgeResourceUpdates(registry: Registry, bus: MessageBus): () => void {
  let replaying = false;
  const offLocal = registry.onResourceUpdated((uri) => {
    if (!replaying) publishTopic(bus, 'resource_updated', { uri });
  });
  const offBus = onTopic(bus, 'resource_updated', ({ uri }, origin) => {
    if (origin === bus.instanceId) return;
    replaying = true;
    try {
      registry.resourceUpdated(uri);
    } finally {
      replaying = false;
    }
  });
  return () => {
    offLocal();
    offBus();
  };
}
