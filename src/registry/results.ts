/**
 * Turning what a handler returned (already converted from Lua to JS) into MCP results, by the
 * rules of LUA_API §2.2 for tools, and the prompt and resource shapes of §2.
 */
import { RegistryError } from './errors.js';
import { extractImages, imageItem, isImageValue } from './result-images.js';
import type {
  ContentItem,
  PromptMessage,
  PromptResult,
  ResourceContents,
  ToolResult,
} from './types.js';

const textDecoder = new TextDecoder();

function asText(v: unknown): string {
  if (typeof v === 'string') return v;
  if (v instanceof Uint8Array) return textDecoder.decode(v);
  return String(v);
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Uint8Array);
}

/** JSON text of a value, with byte strings shown as text. */
export function toJsonText(value: unknown): string {
  return JSON.stringify(value, (_k, v: unknown) =>
    v instanceof Uint8Array ? textDecoder.decode(v) : v,
  );
}

/** Lua-style snake_case keys accepted next to MCP's camelCase ones in content items. */
function normalizeItem(item: Record<string, unknown>): ContentItem {
  const out: Record<string, unknown> = { ...item };
  if ('mime_type' in out) {
    out.mimeType ??= out.mime_type;
    delete out.mime_type;
  }
  if (out.type === 'text' && out.text !== undefined) out.text = asText(out.text);
  // An image value (mcp.image) used as a content item: only the fields MCP defines.
  if (isImageValue(out)) return imageItem(out);
  return out as ContentItem;
}

/** The content item types of MCP: only an array led by one of these is taken as content. */
const CONTENT_TYPES = new Set(['text', 'image', 'audio', 'resource', 'resource_link']);

/**
 * A content array: its first item's `type` is an MCP content type. Records that merely have a
 * `type` field (`{ {type = "bug", title = ...} }`) are data, sent as JSON: passed through, they
 * made a result that no client accepts.
 */
function isContentArray(v: unknown): v is Record<string, unknown>[] {
  return (
    Array.isArray(v) &&
    v.length > 0 &&
    isPlainObject(v[0]) &&
    typeof v[0].type === 'string' &&
    CONTENT_TYPES.has(v[0].type)
  );
}

export function toToolResult(value: unknown): ToolResult {
  if (value === undefined || value === null) return { content: [] };
  if (typeof value === 'string' || value instanceof Uint8Array) {
    return { content: [{ type: 'text', text: asText(value) }] };
  }
  if (typeof value === 'number' || typeof value === 'boolean') {
    return { content: [{ type: 'text', text: String(value) }] };
  }
  if (isContentArray(value)) {
    return { content: value.map((item) => normalizeItem(item)) };
  }
  if (isPlainObject(value) && Array.isArray(value.content)) {
    const result: ToolResult = {
      content: (value.content as unknown[])
        .filter(isPlainObject)
        .map((item) => normalizeItem(item)),
    };
    const isError = value.isError ?? value.is_error;
    if (isError === true) result.isError = true;
    const structured = value.structuredContent ?? value.structured_content;
    if (isPlainObject(structured)) result.structuredContent = structured;
    return result;
  }
  // Pictures anywhere in the value become image items, with placeholders where they stood.
  const pictures = extractImages(value);
  const plain = pictures.value;
  const result: ToolResult = { content: [{ type: 'text', text: toJsonText(plain) }] };
  if (isPlainObject(plain)) result.structuredContent = plain;
  result.content.push(...pictures.images);
  return result;
}

/**
 * `{description, messages}` or a string (one user text message, with the prompt's own
 * `description` as Botster gives it).
 */
export function toPromptResult(value: unknown, name: string, description?: string): PromptResult {
  if (typeof value === 'string' || value instanceof Uint8Array) {
    const result: PromptResult = {
      messages: [{ role: 'user', content: { type: 'text', text: asText(value) } }],
    };
    if (description !== undefined && description !== '') result.description = description;
    return result;
  }
  if (!isPlainObject(value) || !Array.isArray(value.messages)) {
    throw new RegistryError(
      'invalid_definition',
      `prompt '${name}' returned ${value === undefined ? 'nothing' : 'a value'} that is neither a string nor {description, messages}`,
    );
  }
  const messages: PromptMessage[] = value.messages.map((m, i) => {
    if (!isPlainObject(m))
      throw new RegistryError(
        'invalid_definition',
        `prompt '${name}': message ${i + 1} is not a table`,
      );
    const role =
      m.role === 'assistant'
        ? 'assistant'
        : m.role === 'user' || m.role === undefined
          ? 'user'
          : undefined;
    if (!role)
      throw new RegistryError(
        'invalid_definition',
        `prompt '${name}': message ${i + 1} has role '${String(m.role)}' (user or assistant expected)`,
      );
    let content: ContentItem;
    if (typeof m.content === 'string' || m.content instanceof Uint8Array) {
      content = { type: 'text', text: asText(m.content) };
    } else if (isPlainObject(m.content) && typeof m.content.type === 'string') {
      content = normalizeItem(m.content);
    } else if (isContentArray(m.content)) {
      content = normalizeItem(m.content[0] as Record<string, unknown>);
    } else {
      throw new RegistryError(
        'invalid_definition',
        `prompt '${name}': message ${i + 1} has no content`,
      );
    }
    return { role, content };
  });
  const result: PromptResult = { messages };
  if (value.description !== undefined) result.description = asText(value.description);
  return result;
}

/** A resource content item: a string, bytes, or a table with `text` or `blob`. */
function isResourceItem(v: unknown): boolean {
  return (
    typeof v === 'string' ||
    v instanceof Uint8Array ||
    (isPlainObject(v) && (v.text !== undefined || v.blob !== undefined))
  );
}

/**
 * A string (text), `{text=..., mime_type=...}`, `{blob=<bytes>, mime_type=...}` or an array of
 * those. Blobs are bytes (a Lua string) and go out base64-encoded. As Botster: any other table
 * is sent as its JSON text, and a number or boolean as its `tostring`, with the resource's MIME
 * type (`application/json` when it has none).
 */
export function toResourceContents(
  value: unknown,
  uri: string,
  defaultMime?: string,
): ResourceContents[] {
  if (typeof value === 'number' || typeof value === 'boolean') {
    return [withMime({ uri, text: String(value) }, defaultMime ?? 'application/json')];
  }
  const asItems = Array.isArray(value)
    ? value.length > 0 && value.every(isResourceItem)
    : isResourceItem(value);
  if (!asItems && (isPlainObject(value) || Array.isArray(value))) {
    return [withMime({ uri, text: toJsonText(value) }, defaultMime ?? 'application/json')];
  }
  const items = Array.isArray(value) ? value : [value];
  return items.map((item, i) => {
    if (typeof item === 'string') return withMime({ uri, text: item }, defaultMime);
    // Bytes that are not UTF-8 cannot be text: they travel as a blob.
    if (item instanceof Uint8Array) {
      return withMime({ uri, blob: Buffer.from(item).toString('base64') }, defaultMime);
    }
    if (!isPlainObject(item)) {
      throw new RegistryError(
        'invalid_definition',
        `resource ${uri}: item ${i + 1} is neither a string nor a table`,
      );
    }
    const itemUri = typeof item.uri === 'string' ? item.uri : uri;
    const mime = (item.mime_type ?? item.mimeType ?? defaultMime) as string | undefined;
    if (item.blob !== undefined) {
      const bytes =
        typeof item.blob === 'string'
          ? Buffer.from(item.blob, 'utf8')
          : Buffer.from(item.blob as Uint8Array);
      return withMime({ uri: itemUri, blob: bytes.toString('base64') }, mime);
    }
    if (item.text !== undefined) return withMime({ uri: itemUri, text: asText(item.text) }, mime);
    throw new RegistryError(
      'invalid_definition',
      `resource ${uri}: item ${i + 1} has neither text nor blob`,
    );
  });
}

function withMime(c: ResourceContents, mime: string | undefined): ResourceContents {
  if (mime !== undefined) c.mimeType = mime;
  return c;
}
