/**
 * Reading an upstream's lists (tools, prompts, resources, templates) for the proxy's import.
 * The SDK's listTools checks a whole page against the spec's schema, so one tool whose
 * inputSchema was not an object failed the page and the import of everything; here a page only
 * has to be an object with an array, each entry is checked on its own (one that does not fit is
 * skipped, with a warning naming it), names are bounded (MAX_NAME_LENGTH, the spec's guidance
 * for tool names), and `nextCursor` is followed: until `max` entries, MAX_LIST_PAGES pages, or
 * a cursor seen before.
 */
import type { Client } from '@modelcontextprotocol/client';
import type { Logger } from '../log.js';
import { paramHeaderProblem } from './param-header-check.js';

export type ListKind = 'tools' | 'prompts' | 'resources' | 'resourceTemplates';

const METHODS: Record<ListKind, string> = {
  tools: 'tools/list',
  prompts: 'prompts/list',
  resources: 'resources/list',
  resourceTemplates: 'resources/templates/list',
};

/** Pages of one list read per import; a cursor that never ends stops here. */
export const MAX_LIST_PAGES = 100;
/** Characters of an upstream's tool or prompt name (the MCP spec: 1 to 128 for tool names). */
export const MAX_NAME_LENGTH = 128;
/** Characters of an upstream resource's URI or template (limits.subscriptions.uri_length's default). */
export const MAX_URI_LENGTH = 4096;
/**
 * How deep an upstream tool's input or output schema may nest (objects and arrays). A schema
 * 5,000 levels deep overflowed the stack on its way to the hub and failed the import of the
 * whole upstream ("Maximum call stack size exceeded"); now only that tool is skipped.
 */
export const MAX_SCHEMA_DEPTH = 64;

type Entry = Record<string, unknown>;

/** Skipped entries named one by one in the log, per list and import. */
const WARNINGS = 10;

/** A Standard Schema that takes any object: the entries are checked one by one below. */
const anyObject = {
  '~standard': {
    version: 1 as const,
    vendor: 'moonhub',
    validate: (value: unknown) =>
      typeof value === 'object' && value !== null && !Array.isArray(value)
        ? { value: value as Entry }
        : { issues: [{ message: 'a list result must be an object' }] },
  },
};

const isObject = (v: unknown): v is Entry =>
  typeof v === 'object' && v !== null && !Array.isArray(v);
const optString = (e: Entry, k: string) => e[k] === undefined || typeof e[k] === 'string';
const optObject = (e: Entry, k: string) => e[k] === undefined || isObject(e[k]);

/** Whether `value` nests objects and arrays deeper than `max` (iterative: any depth is safe). */
function deeperThan(value: unknown, max: number): boolean {
  const stack: [unknown, number][] = [[value, 1]];
  while (stack.length > 0) {
    const [node, depth] = stack.pop()!;
    if (typeof node !== 'object' || node === null) continue;
    if (depth > max) return true;
    for (const child of Object.values(node)) stack.push([child, depth + 1]);
  }
  return false;
}

function checkName(name: unknown): string | undefined {
  if (typeof name !== 'string' || name.length === 0) return 'its name is not a non-empty string';
  if (name.length > MAX_NAME_LENGTH)
    return `its name is longer than ${MAX_NAME_LENGTH} characters (${name.length})`;
  return undefined;
}

/** Why an entry cannot be imported, or undefined when it can. */
function problemOf(kind: ListKind, e: unknown, paramHeaders: boolean): string | undefined {
  if (!isObject(e)) return 'it is not an object';
  if (!optString(e, 'title') || !optString(e, 'description'))
    return 'its title or description is not a string';
  if (kind === 'tools') {
    const input = e.inputSchema;
    if (!isObject(input) || input.type !== 'object')
      return 'its inputSchema is not an object schema ({"type": "object"})';
    if (!optObject(e, 'outputSchema') || !optObject(e, 'annotations'))
      return 'its outputSchema or annotations is not an object';
    if (deeperThan(input, MAX_SCHEMA_DEPTH) || deeperThan(e.outputSchema, MAX_SCHEMA_DEPTH))
      return `its inputSchema or outputSchema nests deeper than ${MAX_SCHEMA_DEPTH} levels`;
    const headers = paramHeaders ? paramHeaderProblem(input) : undefined;
    if (headers !== undefined) return `its x-mcp-header declarations are invalid: ${headers}`;
    return checkName(e.name);
  }
  if (kind === 'prompts') {
    if (e.arguments !== undefined) {
      if (!Array.isArray(e.arguments)) return 'its arguments is not a list';
      if (!e.arguments.every((a) => isObject(a) && typeof a.name === 'string'))
        return 'an argument has no name';
    }
    return checkName(e.name);
  }
  if (typeof e.name !== 'string') return 'its name is not a string';
  if (!optString(e, 'mimeType')) return 'its mimeType is not a string';
  const uri = kind === 'resources' ? e.uri : e.uriTemplate;
  if (typeof uri !== 'string' || uri.length === 0) return 'it has no uri';
  if (uri.length > MAX_URI_LENGTH)
    return `its uri is longer than ${MAX_URI_LENGTH} characters (${uri.length})`;
  if (e.name.length > MAX_URI_LENGTH)
    return `its name is longer than ${MAX_URI_LENGTH} characters (${e.name.length})`;
  return undefined;
}

function label(e: unknown): string {
  if (!isObject(e)) return JSON.stringify(e)?.slice(0, 80) ?? String(e);
  const name = e.name ?? e.uri ?? e.uriTemplate;
  return typeof name === 'string' ? name.slice(0, MAX_NAME_LENGTH + 10) : '(unnamed)';
}

/**
 * Every page of one list, up to `max` entries (the rest of that page kept so the caller's cap
 * can say how many were listed), each entry checked; entries that do not fit are logged and left
 * out. `request` sends one list request with the given params (the connection's `request`).
 */
export async function listAll(
  request: <T>(run: (c: Client, o: Record<string, unknown>) => Promise<T>) => Promise<T>,
  kind: ListKind,
  max: number,
  logger: Logger,
  /** A stdio upstream: no HTTP headers, so `x-mcp-header` declarations are not checked. */
  overStdio = false,
): Promise<Entry[]> {
  const out: Entry[] = [];
  // As the SDK client's listTools: tools with invalid x-mcp-header declarations are left out of
  // a 2026-07-28 connection's list over HTTP (a client MUST NOT call them).
  let paramHeaders = false;
  const seen = new Set<string>();
  let cursor: string | undefined;
  let skipped = 0;
  for (let page = 0; ; page++) {
    if (page === MAX_LIST_PAGES) {
      logger.warn(
        { kind, pages: page },
        `upstream list has more than ${MAX_LIST_PAGES} pages; the rest are skipped`,
      );
      break;
    }
    const params = cursor === undefined ? {} : { cursor };
    const result: Entry = await request((c, o) => {
      paramHeaders = !overStdio && c.getProtocolEra() === 'modern';
      return c.request({ method: METHODS[kind], params }, anyObject, o) as Promise<Entry>;
    });
    const items = Array.isArray(result[kind]) ? (result[kind] as unknown[]) : [];
    for (const e of items) {
      const problem = problemOf(kind, e, paramHeaders);
      if (problem === undefined) out.push(e as Entry);
      // The first few named; a list of a million bad entries is not a million log lines.
      else if (++skipped <= WARNINGS)
        logger.warn(
          { kind, entry: label(e), problem },
          `upstream ${kind} entry skipped: ${problem}`,
        );
    }
    const next = result.nextCursor;
    if (out.length >= max || typeof next !== 'string' || seen.has(next)) break;
    seen.add(next);
    cursor = next;
  }
  if (skipped > WARNINGS)
    logger.warn({ kind, skipped }, `upstream ${kind}: ${skipped - WARNINGS} more entries skipped`);
  return out;
}
