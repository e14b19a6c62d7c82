/**
 * `moonhub dev`'s output for a person at a terminal: one line per call (when, who, what, how long,
 * how big or what went wrong), plugin reloads, and a failed reload with the source line at fault.
 * The hub's JSON log still goes to stderr at warn level; these lines are what to read.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, isAbsolute, join } from 'node:path';
import type { CallEvent } from '../server/dispatcher.js';
import type { PluginHost } from '../plugins/plugin-host.js';

function clock(): string {
  return new Date().toTimeString().slice(0, 8);
}

function size(bytes: number): string {
  return bytes < 1024 ? `${bytes} B` : `${(bytes / 1024).toFixed(1)} KiB`;
}

/** `session:1b4e…` → `session:1b4e28ba`: enough to tell sessions apart on one screen. */
function who(principal: string | undefined): string {
  if (principal === undefined) return 'local';
  const [kind, id] = principal.split(':', 2);
  return id !== undefined && id.length > 12 ? `${kind}:${id.slice(0, 8)}` : principal;
}

export function callLine(e: CallEvent): string {
  const verb = e.method === 'tools/call' ? 'call' : e.method === 'prompts/get' ? 'prompt' : 'read';
  const ms = e.ms < 10 ? e.ms.toFixed(1) : Math.round(e.ms).toString();
  const outcome =
    e.error === undefined ? size(e.bytes) : `ERROR ${e.error.split('\n')[0]!.slice(0, 200)}`;
  return `${clock()} ${who(e.principal)} ${verb} ${e.name} ${ms} ms ${outcome}`;
}

/** The line `line` of `file`, numbered, or nothing when it cannot be read. */
export function sourceLine(file: string | undefined, line: number | undefined): string {
  if (file === undefined || line === undefined) return '';
  try {
    const lines = readFileSync(file, 'utf8').split('\n');
    // Lua names the line after the last one for an error at the end of the file.
    let n = Math.min(line, lines.length);
    while (n > 1 && (lines[n - 1] ?? '').trim() === '') n--;
    const text = lines[n - 1];
    return text === undefined ? '' : `\n  ${n} | ${text}`;
  } catch {
    return '';
  }
}

/**
 * Where an error's file is: Lua names it relative to the plugins directory (`notes/init.lua`,
 * `hello.lua`), so it is looked up beside the plugin's entry and one folder above.
 */
function onDisk(file: string | undefined, entry: string | undefined): string | undefined {
  if (file === undefined || entry === undefined || isAbsolute(file)) return file;
  for (const base of [dirname(entry), dirname(dirname(entry))]) {
    const path = join(base, file);
    if (existsSync(path)) return path;
  }
  return undefined;
}

/** Prints reloads and reload errors of `plugins` with `write`. */
export function watchPlugins(plugins: PluginHost, write: (text: string) => void): void {
  plugins.onEvent((e) => {
    if (e.type === 'loaded') write(`${clock()} loaded ${e.name}`);
    else if (e.type === 'removed') write(`${clock()} removed ${e.name}`);
    else {
      const status = plugins.status().find((p) => p.name === e.name);
      const err = status?.error;
      write(
        `${clock()} FAILED ${e.name} (the previous version keeps serving): ${e.message}${sourceLine(onDisk(err?.file, status?.entry), err?.line)}`,
      );
    }
  });
}
