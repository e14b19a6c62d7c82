/**
 * An operator's plugin reload (the dashboard's `POST /admin/dashboard/reload`) lands on one
 * process; the others must reload the plugin too, or clients whose streams are held elsewhere
 * would never see the change (and the processes would serve different tools). File edits need
 * no relay: every process watches the same files. Only the reloads this process was asked for
 * are published, so a reload never echoes back and forth.
 */
import type { MessageBus } from './bus.js';
import { onTopic, publishTopic } from './topics.js';

export interface Reloadable {
  reload(name: string): Promise<boolean>;
}

/**
 * Replays the other processes' reloads here; returns the reload to hand the operator's routes
 * (reloads here, then tells the others) and the remover.
 */
export function bridgePluginReloads(
  plugins: Reloadable,
  bus: MessageBus,
  onError?: (err: unknown, plugin: string) => void,
): { reload: (name: string) => Promise<boolean>; close: () => void } {
  const off = onTopic(bus, 'plugin_reload', ({ plugin }, origin) => {
    if (origin === bus.instanceId) return;
    plugins.reload(plugin).catch((err: unknown) => onError?.(err, plugin));
  });
  return {
    reload: async (name) => {
      const known = await plugins.reload(name);
      if (known) publishTopic(bus, 'plugin_reload', { plugin: name });
      return known;
    },
    close: off,
  };
}
