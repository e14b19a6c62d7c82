/**
 * RFC 6570 level-1 templates (`note://{id}`), the form resource templates take here. A level-1
 * expansion percent-encodes every reserved character, so a variable matches a run without `/`,
 * `?` or `#`, and is percent-decoded on the way out.
 *
 * The URI comes from a client, so matching never uses a backtracking regex (`file://{name}.{ext}`
 * against 80,000 dots took 11 s that way): one backward pass per variable over the URI finds, for
 * each position, the longest value that still lets the rest match. Time is O(URI length x
 * template length), whatever the URI holds; the values are the ones a greedy regex would pick.
 */

const VAR = /\{([A-Za-z0-9_.%]+)\}/g;

/** A template taken apart once: what matching it needs. */
export interface UriTemplate {
  /** The literal parts: literals[0], then each variable followed by literals[i + 1]. */
  literals: string[];
  names: string[];
}
type Compiled = UriTemplate;

export function isTemplate(uri: string): boolean {
  VAR.lastIndex = 0;
  const found = VAR.test(uri);
  // matchAll() copies lastIndex from VAR: left set, it would skip the variables of a template.
  VAR.lastIndex = 0;
  return found;
}

/** Takes `template` apart (the resource shelf keeps the result with each template entry). */
export function parseTemplate(template: string): UriTemplate {
  const literals: string[] = [];
  const names: string[] = [];
  let last = 0;
  for (const m of template.matchAll(VAR)) {
    literals.push(template.slice(last, m.index));
    names.push(m[1] as string);
    last = (m.index ?? 0) + m[0].length;
  }
  literals.push(template.slice(last));
  return { literals, names };
}

/** `/`, `?` and `#` end a variable's value. */
function isStop(code: number): boolean {
  return code === 0x2f || code === 0x3f || code === 0x23;
}

/**
 * For variable i (0-based) starting at position p, the end of its longest value after which
 * literals[i + 1] and everything behind it still match; -1 where none does. Built from the last
 * variable backwards, each table in one pass.
 */
function endTables(uri: string, c: Compiled): Int32Array[] {
  const m = uri.length;
  const n = c.names.length;
  const tables: Int32Array[] = new Array<Int32Array>(n);
  // canRest(q): the URI from q on matches what follows variable i's literal.
  let canRest = (q: number): boolean => q === m;
  for (let i = n - 1; i >= 0; i--) {
    const lit = c.literals[i + 1] as string;
    const best = new Int32Array(m + 1);
    // Positions where the literal occurs and the rest matches behind it.
    const ok = (e: number): boolean => uri.startsWith(lit, e) && canRest(e + lit.length);
    best[m] = ok(m) ? m : -1;
    for (let p = m - 1; p >= 0; p--) {
      if (isStop(uri.charCodeAt(p))) best[p] = ok(p) ? p : -1;
      else {
        const later = best[p + 1] as number;
        best[p] = later !== -1 ? later : ok(p) ? p : -1;
      }
    }
    tables[i] = best;
    canRest = (q: number): boolean => q <= m && (best[q] as number) !== -1;
  }
  return tables;
}

export function matchTemplate(template: string, uri: string): Record<string, string> | undefined {
  return matchParsed(parseTemplate(template), uri);
}

/**
 * `matchTemplate` for a template taken apart ahead. Before the pass over the URI, what every
 * match needs is checked in native string search: the head at the start, the last literal at
 * the end, each literal between somewhere after the head. A registry resolves a URI against its
 * templates in turn, and 2,000 templates sharing a head cost a 4 KB URI that matched none of
 * them 537 ms of the hub's thread (a pass and its tables per template); a URI can still pass
 * these checks for every template only if it holds every template's literals.
 */
export function matchParsed(c: UriTemplate, uri: string): Record<string, string> | undefined {
  const head = c.literals[0] as string;
  if (!uri.startsWith(head)) return undefined;
  const n = c.names.length;
  if (n === 0) return uri === head ? {} : undefined;
  const tail = c.literals[n] as string;
  if (uri.length < head.length + tail.length || !uri.endsWith(tail)) return undefined;
  for (let i = 1; i < n; i++)
    if (!uri.includes(c.literals[i] as string, head.length)) return undefined;
  const tables = endTables(uri, c);
  let p = head.length;
  const params: Record<string, string> = {};
  for (let i = 0; i < c.names.length; i++) {
    const end = (tables[i] as Int32Array)[p] as number;
    if (end === -1) return undefined;
    const raw = uri.slice(p, end);
    try {
      params[c.names[i] as string] = decodeURIComponent(raw);
    } catch {
      params[c.names[i] as string] = raw;
    }
    p = end + (c.literals[i + 1] as string).length;
  }
  return params;
}

/** The variable names of a template, in order (empty for a fixed URI). */
export function templateVariables(template: string): string[] {
  const names: string[] = [];
  for (const m of template.matchAll(VAR)) names.push(m[1] as string);
  return names;
}
