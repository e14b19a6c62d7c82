/**
 * The `search_tools` built-in: finds tools by the words of their names and descriptions, within
 * the caller's view, and returns their schemas, so an agent facing hundreds of tools can look up
 * the few it needs instead of holding every schema in its context.
 */
import type { Registry } from '../registry/registry.js';
import { toJsonText } from '../registry/results.js';
import type { CallContext, ToolInfo, ToolResult } from '../registry/types.js';

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

/** Name hits weigh more than description hits; a tool must match at least one word. */
function score(tool: ToolInfo, query: string[]): number {
  const name = tool.name.toLowerCase();
  const nameWords = new Set(words(tool.name));
  const text = `${tool.title ?? ''} ${tool.description}`.toLowerCase();
  let total = 0;
  for (const w of query) {
    if (nameWords.has(w)) total += 4;
    else if (name.includes(w)) total += 3;
    if (text.includes(w)) total += 1;
  }
  return total;
}

export function searchToolsHandler(registry: Registry) {
  return async (args: Record<string, unknown>, ctx: CallContext): Promise<ToolResult> => {
    const query = words(String(args.query ?? ''));
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
