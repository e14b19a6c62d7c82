/**
 * A real hub serving a scratch folder's plugins, with one 2026-07-28 client connected: the
 * set-up of the tests that attack one plugin and watch the hub and its other plugins.
 */
import type { Client } from '@modelcontextprotocol/client';
import { connectHttpClient } from './mcp-client.js';
import { startMoonhub, type MoonhubProcess } from './moonhub-process.js';
import { scratch, type Scratch } from './scratch.js';

export interface PluginHub {
  dir: Scratch;
  hub: MoonhubProcess;
  client: Client;
  /** Closes the client, stops the hub and removes the folder. */
  stop(): Promise<void>;
}

/** The hub's arguments by default: the folder's `plugins/`, not watched. */
const unwatched = (dir: Scratch): string[] => ['--plugins', `${dir.dir}/plugins`, '--no-watch'];

/**
 * Writes `plugins` (file name -> Lua source) into a scratch folder's `plugins/`, starts a hub
 * with `args(folder)` and connects a client to it.
 */
export async function startPluginHub(
  plugins: Record<string, string>,
  args: (dir: Scratch) => string[] = unwatched,
): Promise<PluginHub> {
  const dir = scratch();
  for (const [name, code] of Object.entries(plugins)) dir.write(`plugins/${name}`, code);
  let hub: MoonhubProcess | undefined;
  try {
    hub = await startMoonhub(args(dir));
    const { client } = await connectHttpClient(hub.url, 'modern');
    const started = hub;
    return {
      dir,
      hub,
      client,
      stop: async () => {
        await client.close();
        await started.stop();
        dir.remove();
      },
    };
  } catch (err) {
    await hub?.stop();
    dir.remove();
    throw err;
  }
}
