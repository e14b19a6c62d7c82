/**
 * RFC 6570 level-1 templates (`note://{id}`), the form resource templates take here. A level-1
 * expansion percent-encodes every reserved character, so a variable matches a run without `/`,
 * `?` or `#`, and is percent-decoded on the way out.
 */

const VAR = /\{([A-Za-z0-9_.%]+)\}/g;
const compiled = new Map<string, { re: RegExp; names: string[] }>();

export function isTemplate(uri: string): boolean {
  VAR.lastIndex = 0;
  const found = VAR.test(uri);
  // matchAll() copies lastIndex from VAR: left set, it would skip the variables of a template.
  VAR.lastIndex = 0;
  return found;
}

export function matchTemplate(template: string, uri: string): Record<string, string> | undefined {
  let c = compiled.get(template);
  if (!c) {
    const names: string[] = [];
    let source = '^';
    let last = 0;
    for (const m of template.matchAll(VAR)) {
      source += escape(template.slice(last, m.index)) + '([^/?#]*)';
      names.push(m[1] as string);
      last = (m.index ?? 0) + m[0].length;
    }
    source += escape(template.slice(last)) + '$';
    c = { re: new RegExp(source), names };
    compiled.set(template, c);
  }
  const m = c.re.exec(uri);
  if (!m) return undefined;
  const params: Record<string, string> = {};
  c.names.forEach((name, i) => {
    const raw = m[i + 1] ?? '';
    try {
      params[name] = decodeURIComponent(raw);
    } catch {
      params[name] = raw;
    }
  });
  return params;
}

function escape(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** The variable names of a template, in order (empty for a fixed URI). */
export function templateVariables(template: string): string[] {
  const names: string[] = [];
  for (const m of template.matchAll(VAR)) names.push(m[1] as string);
  return names;
}
