/**
 * An upstream's tools as the proxy (proxy.ts) holds them: the approved definition and its
 * fingerprint, the drift a later import finds (reported, and with `pin` refused), and the
 * checks and trimming of a tool's result. Apart so the proxy class keeps to the imports and calls.
 */
import { createHash } from 'node:crypto';
import type { Client } from '@modelcontextprotocol/client';
import type { Logger } from '../log.js';
import type { ToolInfo, ToolResult } from '../registry/types.js';
import { compileValidator, tooLargeToCompile, type ArgumentValidator } from '../registry/schema.js';
import { passThrough } from './raw-result.js';

/** A tool as the upstream lists it. */
export type UpstreamTool = Awaited<ReturnType<Client['listTools']>>['tools'][number];

export interface ChangedTool {
  name: string;
  upstreamName: string;
  approvedHash: string;
  currentHash: string;
  detectedAt: string;
  refused: boolean;
}

/** A tool definition's fingerprint: what a model reads and what it must send. */
export function toolHash(t: {
  description?: string;
  inputSchema?: unknown;
  outputSchema?: unknown;
  title?: string;
}): string {
  return createHash('sha256')
    .update(
      canonical({
        title: t.title ?? null,
        description: t.description ?? '',
        inputSchema: t.inputSchema ?? null,
        outputSchema: t.outputSchema ?? null,
      }),
    )
    .digest('hex');
}

function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v && typeof v === 'object')
    return `{${Object.keys(v)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical((v as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  return JSON.stringify(v) ?? 'null';
}

export interface ImportedTool {
  upstream: string;
  /**
   * False for a tool with `x-mcp-header` parameters (SEP-2243): the SDK client mirrors those
   * into headers, so its calls go through the SDK.
   */
  direct: boolean;
  /**
   * Such a tool's definition as the upstream listed it, handed to the SDK's callTool (the proxy
   * lists with its own requests, list-pages.ts, so the SDK holds no tools/list to read it from).
   */
  definition?: UpstreamTool;
  /** The approved output schema's validator, compiled at the first call that needs it. */
  checkOutput?: ArgumentValidator | null;
  /** Set by a refresh: accept whatever definition the next import finds. */
  reapprove?: boolean;
  approvedHash: string;
  approved: ToolInfo;
  changed?: ChangedTool;
}

/**
 * The upstream's result with only what MCP's tool result holds (no era-specific fields); when
 * the upstream's text holds exactly that, it is passed on as it came (raw-result.ts).
 */
export function toolResult(r: Record<string, unknown>): ToolResult {
  const out: ToolResult = { content: (r.content ?? []) as ToolResult['content'] };
  if (r.isError === true) out.isError = true;
  if (r.structuredContent && typeof r.structuredContent === 'object')
    out.structuredContent = r.structuredContent as Record<string, unknown>;
  if (r._meta && typeof r._meta === 'object') out._meta = r._meta as Record<string, unknown>;
  passThrough(r, out);
  return out;
}

/**
 * A tool with an output schema must return structured content that fits it (the check the SDK
 * client made on every result; compiled once per approved definition).
 */
export function checkStructured(
  tool: ImportedTool,
  upstreamName: string,
  r: Record<string, unknown>,
): void {
  const schema = tool.approved.outputSchema;
  if (schema === undefined || r.isError === true) return;
  if (r.structuredContent === undefined)
    throw new Error(
      `Tool ${upstreamName} has an output schema but did not return structured content`,
    );
  if (tool.checkOutput === undefined) {
    try {
      // Past the members the hub compiles, it is not checked here (schema.ts), as a schema
      // that does not compile: compiling it held the hub's thread for seconds.
      tool.checkOutput = tooLargeToCompile(schema)
        ? null
        : compileValidator(schema, `tool '${upstreamName}' output`);
    } catch {
      tool.checkOutput = null; // The SDK skips a schema it cannot compile; so does this.
    }
  }
  const problem = tool.checkOutput?.(r.structuredContent);
  if (problem !== undefined)
    throw new Error(`Structured content does not match the tool's output schema: ${problem}`);
}

/** False for a tool with `x-mcp-header` parameters: its calls go through the SDK (ImportedTool). */
function directCalls(t: UpstreamTool): boolean {
  return !JSON.stringify(t.inputSchema ?? {}).includes('"x-mcp-header"');
}

/**
 * Records an imported tool in `tools`: approved when new or re-approved, drift noted (and
 * logged once) when its definition changed since. Returns the definition to show (a pinned
 * tool keeps showing what was approved) and its `toolHash`.
 */
export function importedTool(
  tools: Map<string, ImportedTool>,
  name: string,
  t: UpstreamTool,
  pin: boolean,
  logger: Logger,
): { info: ToolInfo; hash: string } {
  const info: ToolInfo = {
    name,
    description: t.description ?? '',
    inputSchema: t.inputSchema as Record<string, unknown>,
  };
  if (t.title !== undefined) info.title = t.title;
  if (t.outputSchema !== undefined) info.outputSchema = t.outputSchema as Record<string, unknown>;
  if (t.annotations !== undefined) info.annotations = t.annotations as Record<string, unknown>;
  const hash = toolHash(t);
  const known = tools.get(name);
  let shown = { info, hash };
  if (!known || known.reapprove) {
    const direct = directCalls(t);
    tools.set(name, {
      upstream: t.name,
      direct,
      definition: direct ? undefined : t,
      approvedHash: hash,
      approved: info,
    });
  } else if (known.approvedHash !== hash) {
    if (!known.changed || known.changed.currentHash !== hash) {
      known.changed = {
        name,
        upstreamName: t.name,
        approvedHash: known.approvedHash,
        currentHash: hash,
        detectedAt: new Date().toISOString(),
        refused: pin,
      };
      logger.warn(
        { tool: name, pinned: pin },
        pin
          ? 'upstream changed a pinned tool definition; calls are refused until it is re-approved'
          : 'upstream changed a tool definition after import',
      );
    }
    // A pinned tool keeps showing what was approved, never the changed text.
    if (pin) shown = { info: known.approved, hash: known.approvedHash };
    else {
      known.approved = info;
      known.checkOutput = undefined;
      known.direct = directCalls(t);
      known.definition = known.direct ? undefined : t;
    }
  } else {
    known.changed = undefined;
  }
  return shown;
}

/**
 * What a registered tool is made of; an import that finds the same key registers nothing.
 * `hash` is `toolHash` of the definition (title, description, schemas), so they are not
 * serialised again here: that was the largest part of an import's cost.
 */
export function definitionKey(
  shown: { info: ToolInfo; hash: string },
  upstreamName: string,
  timeoutMs?: number,
): string {
  const { info, hash } = shown;
  return canonical({
    hash,
    name: info.name,
    annotations: info.annotations ?? null,
    icons: info.icons ?? null,
    upstreamName,
    timeoutMs: timeoutMs ?? null,
  });
}

/** Tools, prompts or resources an upstream lists past this many are skipped (ProxyOptions). */
export const DEFAULT_MAX_ENTRIES = 10_000;

/**
 * The first `max` of an upstream's list, warning once per import when it was longer: an
 * upstream listing 100,000 tools would otherwise cost the hub's thread and heap for each.
 */
export function capped<T>(items: T[], max: number, kind: string, logger: Logger): T[] {
  if (items.length <= max) return items;
  logger.warn(
    { kind, listed: items.length, imported: max },
    `upstream lists more ${kind} than plugin_limits.registrations; the rest are skipped`,
  );
  return items.slice(0, max);
}
