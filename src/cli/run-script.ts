/**
 * `moonhub run FILE.lua`: runs a Lua script in a fresh sandboxed state with the plugin API,
 * against the plugins loaded into a hub (no network server), and hands back its return value.
 */
import { readFileSync, realpathSync } from 'node:fs';
import { join, resolve, sep } from 'node:path';
import type { Hub } from '../hub.js';
import type { Logger } from '../log.js';
import { LuaState } from '../lua/state.js';
import { builtinModule, installApi, registryCaller } from '../lua-api/index.js';
import { installNotice } from '../lua-api/notice.js';

export interface RunOptions {
  file: string;
  /** The workspace root: `require` finds modules under it. */
  root: string;
  timeoutMs: number;
  logger: Logger;
  /** The words after the script's name on the command line: the chunk's `...`. */
  args?: string[];
  /** Where `print` output goes (stderr for the CLI, so stdout holds only the result). */
  print: (text: string) => void;
}

export async function runScript(hub: Hub, opts: RunOptions): Promise<unknown> {
  const root = realpathSync(resolve(opts.root));
  const state = await LuaState.create({
    name: 'script',
    print: opts.print,
    findModule: (name) => {
      const builtin = builtinModule(name);
      if (builtin) return builtin;
      if (!/^[A-Za-z0-9_]+(\.[A-Za-z0-9_]+)*$/.test(name)) return `module '${name}' not found`;
      const rel = name.split('.').join(sep);
      for (const candidate of [join(root, `${rel}.lua`), join(root, rel, 'init.lua')]) {
        try {
          const real = realpathSync(candidate);
          if (!real.startsWith(root + sep))
            return `module '${name}' not found: it leads outside the root`;
          return { source: readFileSync(real), chunkname: candidate };
        } catch {
          // try the next candidate
        }
      }
      return `module '${name}' not found under ${root}`;
    },
  });
  try {
    installApi(state, {
      registry: hub.registry,
      owner: 'script',
      logger: opts.logger.child({ script: opts.file }),
      // /source/ of a script is the workspace root (LUA_API §1.1): vfs and mcp.image read there.
      root,
    });
    // A script's notices are for the person running it: print them with its other output.
    const caller = registryCaller({
      registry: hub.registry,
      ctx: { hub_id: hub.registry.hubId, plugin: 'script' },
      notice: (text) => opts.print(`notice: ${text}`),
    });
    installNotice(state, () => caller);
    const ref = state.load(readFileSync(opts.file), `@${opts.file}`);
    const results = await state.call(ref, opts.args ?? [], { timeoutMs: opts.timeoutMs });
    return results[0] ?? null;
  } finally {
    state.close();
  }
}
