/**
 * The `search_tools` built-in: finds tools by the words of their names and descriptions, within
 * the caller's view, and returns their schemas, so an agent facing hundreds of tools can look up
 * the few it needs instead of holding every schema in its context.
 */
import { failureResult, type Registry } from '../registry/registry.js';
import { toJsonText } from '../registry/results.js';
import type { CallContext, ToolInfo, ToolResult } from '../registry/types.js';
import type { RefusalReport } from '../lua-api/inner-refusals.js';

export const SEARCH_OWNER = 'builtin:search_tools';
const DEFAULT_LIMIT = 10;
const MAX_LIMIT = 50;

export const SEARCH_DESCRIPTION =
  'Find tools by words in their names and descriptions. Returns the best matches with their input schemas (call them directly, or from an execute script). Example: {"query": "weather forecast", "limit": 5}.';

function words(text: string): string[] {
  return text
    .toLowerCase()
    .split(/[^\p{L}\p{N}]+/u)
    .filter((w) => w.length > 0);
}

/** What a tool is searched by, made once per tool definition (the registry keeps `info`). */
interface Searchable {
  name: string;
  nameWords: Set<string>;
  text: string;
}
const searchable = new WeakMap<ToolInfo, Searchable>();

function searchableOf(tool: ToolInfo): Searchable {
  let s = searchable.get(tool);
  if (s === undefined) {
    s = {
      name: tool.name.toLowerCase(),
      nameWords: new Set(words(tool.name)),
      text: `${tool.title ?? ''} ${tool.description}`.toLowerCase(),
    };
    searchable.set(tool, s);
  }
  return s;
}

/** Name hits weigh more than description hits; a tool must match at least one word. */
function score(tool: ToolInfo, query: readonly string[]): number {
  const { name, nameWords, text } = searchableOf(tool);
  let total = 0;
  for (const w of query) {
    if (nameWords.has(w)) total += 4;
    else if (name.includes(w)) total += 3;
    if (text.includes(w)) total += 1;
  }
  return total;
}

/** The bounds of a query (`execute.search_query_chars`, `execute.search_query_words`; defaults in options.ts). */
export interface SearchBounds {
  queryChars: number;
  queryWords: number;
  /** Told of a refused query (the hub's `moonhub_limit_refusals_total`). */
  onRefused?: RefusalReport;
}

/** The input schema of `search_tools`; its description tells the query's bounds. */
export function searchInputSchema(bounds: SearchBounds): Record<string, unknown> {
  return {
    type: 'object',
    properties: {
      query: {
        type: 'string',
        description: `Words to look for in tool names and descriptions (at most ${bounds.queryChars} characters and ${bounds.queryWords} different words).`,
      },
      limit: {
        type: 'integer',
        minimum: 1,
        maximum: MAX_LIMIT,
        description: 'At most this many (default 10).',
      },
    },
    required: ['query'],
    additionalProperties: false,
  };
}

/**
 * Each query word is looked for in every visible tool's name and text, on the hub's thread: a
 * query of 100,000 words over 1,000 tools held it 8 s (a megabyte of one-letter words, 22 s).
 * Both the query's characters and its different words are bounded.
 */
export function searchToolsHandler(registry: Registry, bounds: SearchBounds) {
  return async (args: Record<string, unknown>, ctx: CallContext): Promise<ToolResult> => {
    const text = String(args.query ?? '');
    if (text.length > bounds.queryChars) {
      bounds.onRefused?.('search_query_chars', 1);
      return failureResult(
        `query has ${text.length} characters, more than ${bounds.queryChars} (execute.search_query_chars)`,
      );
    }
    const query = [...new Set(words(text))];
    if (query.length > bounds.queryWords) {
      bounds.onRefused?.('search_query_words', 1);
      return failureResult(
        `query has ${query.length} different words, more than ${bounds.queryWords} (execute.search_query_words)`,
      );
    }
    const limit = Math.min(
      typeof args.limit === 'number' && args.limit > 0 ? Math.floor(args.limit) : DEFAULT_LIMIT,
      MAX_LIMIT,
    );
    const visible = registry.listTools(ctx.filter);
    const ranked =
      query.length === 0
        ? visible.map((tool) => ({ tool, s: 0 }))
        : visible
            .map((tool) => ({ tool, s: score(tool, query) }))
            .filter((r) => r.s > 0)
            .sort((a, b) => b.s - a.s || (a.tool.name < b.tool.name ? -1 : 1));
    const tools = ranked.slice(0, limit).map(({ tool }) => {
      const out: Record<string, unknown> = {
        name: tool.name,
        description: tool.description,
        inputSchema: tool.inputSchema,
      };
      if (tool.title !== undefined) out.title = tool.title;
      if (tool.outputSchema !== undefined) out.outputSchema = tool.outputSchema;
      return out;
    });
    const structured = { tools, total: ranked.length };
    return {
      content: [{ type: 'text', text: toJsonText(structured) }],
      structuredContent: structured,
    };
  };
}
