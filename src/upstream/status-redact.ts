/**
 * What `hub_status` may show an agent: upstream addresses without credentials, query strings or
 * fragments (tokens live there), a `stdio:` command line reduced to its program name (arguments
 * and paths may hold secrets), and plugin files relative to their plugins directory. The full
 * detail stays in the hub's log, for the operator.
 */
import { basename, isAbsolute, relative, resolve, sep } from 'node:path';

/** An upstream address as an agent may see it. */
export function redactUrl(url: string): string {
  if (url.startsWith('stdio:')) {
    const m = /^\s*(?:"([^"]*)"|'([^']*)'|(\S+))/.exec(url.slice('stdio:'.length));
    return `stdio:${basename(m?.[1] ?? m?.[2] ?? m?.[3] ?? '')}`;
  }
  try {
    const u = new URL(url);
    if (!u.username && !u.password && !u.search && !u.hash) return url;
    return `${u.protocol}//${u.host}${u.pathname}`;
  } catch {
    return '(an address that is not a URL)';
  }
}

const URL_IN_TEXT = /\b[a-z][a-z0-9+.-]*:\/\/[^\s"'<>()]+/gi;

/** Strips the host's folders from plugin paths and secrets from addresses in messages. */
export class StatusRedactor {
  private readonly prefixes: string[];

  constructor(private readonly dirs: readonly string[]) {
    const cwd = process.cwd();
    const prefixes = new Set<string>();
    for (const d of dirs) {
      prefixes.add(resolve(d) + sep);
      const rel = relative(cwd, resolve(d));
      if (rel && !rel.startsWith('..') && !isAbsolute(rel)) prefixes.add(rel + sep);
    }
    // Longest first, so a directory nested in another is stripped whole.
    this.prefixes = [...prefixes].sort((a, b) => b.length - a.length);
  }

  /** A plugin file relative to its plugins directory (its base name when it is in none). */
  file(file: string): string {
    const abs = resolve(file);
    for (const d of this.dirs) {
      const rel = relative(resolve(d), abs);
      if (rel && !rel.startsWith('..') && !isAbsolute(rel)) return rel;
    }
    return basename(file);
  }

  text(text: string): string {
    let out = text.replace(URL_IN_TEXT, (u) => redactUrl(u));
    for (const p of this.prefixes) out = out.split(p).join('');
    return out;
  }
}
