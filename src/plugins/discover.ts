/**
 * Finding plugins in a plugins directory: a folder `name/` with an `init.lua`, or a file
 * `name.lua`. A folder wins over a file of the same name.
 */
import { readdirSync, statSync, existsSync } from 'node:fs';
import { join, basename } from 'node:path';

export interface PluginSource {
  name: string;
  /** The file whose chunk registers the plugin's surface. */
  entry: string;
  /** The folder `require` may read from; undefined for a single-file plugin. */
  folder: string | undefined;
  /** The plugins directory it was found in. */
  dir: string;
}

const NAME = /^[A-Za-z0-9_][A-Za-z0-9_.-]*$/;

export function discoverPlugins(dir: string): PluginSource[] {
  let entries: string[];
  try {
    entries = readdirSync(dir);
  } catch (err) {
    throw new Error(`cannot read the plugins directory ${dir}: ${(err as Error).message}`);
  }
  const found = new Map<string, PluginSource>();
  for (const entry of entries.sort()) {
    const p = locatePlugin(dir, entry.endsWith('.lua') ? entry.slice(0, -4) : entry);
    if (p && !found.has(p.name)) found.set(p.name, p);
  }
  return [...found.values()];
}

/** The plugin called `name` in `dir`, if it exists on disk now. */
export function locatePlugin(dir: string, name: string): PluginSource | undefined {
  if (!NAME.test(name)) return undefined;
  const folder = join(dir, name);
  const init = join(folder, 'init.lua');
  if (existsSync(init) && statSync(folder).isDirectory()) {
    return { name, entry: init, folder, dir };
  }
  const file = join(dir, `${name}.lua`);
  if (existsSync(file) && statSync(file).isFile()) {
    return { name: basename(file, '.lua'), entry: file, folder: undefined, dir };
  }
  return undefined;
}
