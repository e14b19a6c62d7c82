/**
 * `require` inside a plugin: built-in modules, then modules from the plugin's own folder only,
 * never a path out of it. Used on the hub's thread and in plugin workers alike.
 */
import { readFileSync, realpathSync } from 'node:fs';
import { basename, dirname, isAbsolute, join, relative, sep } from 'node:path';
import { builtinModule } from '../lua-api/index.js';
import type { PluginSource } from './discover.js';

/**
 * A file's name as Lua errors show it: relative to the plugin's plugins directory
 * (`notes/init.lua`), never the absolute path on the hub's disk, since these errors reach clients.
 */
export function chunkName(file: string, source: PluginSource): string {
  const base = dirname(source.folder ?? source.entry);
  const rel = relative(base, file);
  return rel && !rel.startsWith('..') && !isAbsolute(rel) ? rel : basename(file);
}

export function findModule(
  source: PluginSource,
  name: string,
): { source: Uint8Array | string; chunkname: string } | string {
  const builtin = builtinModule(name);
  if (builtin) return builtin;
  if (!source.folder) {
    return `module '${name}' not found: a single-file plugin can only require built-in modules (make the plugin a folder with init.lua to add modules)`;
  }
  if (!/^[A-Za-z0-9_]+(\.[A-Za-z0-9_]+)*$/.test(name)) {
    return `module '${name}' not found: module names are dotted identifiers inside the plugin's folder`;
  }
  const rel = name.split('.').join(sep);
  let root: string;
  try {
    root = realpathSync(source.folder);
  } catch {
    return `module '${name}' not found: the plugin folder is gone`;
  }
  const tried: string[] = [];
  for (const candidate of [
    join(source.folder, `${rel}.lua`),
    join(source.folder, rel, 'init.lua'),
  ]) {
    tried.push(chunkName(candidate, source));
    let real: string;
    try {
      real = realpathSync(candidate);
    } catch {
      continue;
    }
    if (real !== root && !real.startsWith(root + sep)) {
      return `module '${name}' not found: ${chunkName(candidate, source)} leads outside the plugin's folder`;
    }
    return { source: readFileSync(real), chunkname: chunkName(candidate, source) };
  }
  return `module '${name}' not found:\n\tno file '${tried.join("'\n\tno file '")}'`;
}
