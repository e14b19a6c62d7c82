/**
 * Pictures in results (LUA_API §3.3): an image value (`{type="image", mime_type, data, ...}`, as
 * `mcp.image` makes it) may sit anywhere in a returned value. Each one becomes an image content
 * item, and in the value it is replaced by `{type="image", image=n}`, n its 1-based position
 * among the pictures. Pure data: no Lua here.
 */
import type { ContentItem } from './types.js';

export const MAX_PICTURES = 16;

export class TooManyPicturesError extends Error {
  constructor(count: number) {
    super(
      `too many pictures: a result carries at most ${MAX_PICTURES}, this one holds ${count} or more`,
    );
    this.name = 'TooManyPicturesError';
  }
}

/** Whether `v` is an image value: type "image", base64 `data` and a MIME type. */
export function isImageValue(v: unknown): v is Record<string, unknown> {
  if (typeof v !== 'object' || v === null || Array.isArray(v) || v instanceof Uint8Array)
    return false;
  const o = v as Record<string, unknown>;
  return (
    o.type === 'image' &&
    typeof o.data === 'string' &&
    (typeof o.mime_type === 'string' || typeof o.mimeType === 'string')
  );
}

/** The MCP image content item for an image value. */
export function imageItem(v: Record<string, unknown>): ContentItem {
  return { type: 'image', data: v.data, mimeType: v.mimeType ?? v.mime_type };
}

/**
 * Replaces every image value inside `value` by its placeholder and returns the image items in
 * order. Values without pictures come back as they were (same object). More than 16 throws.
 */
export function extractImages(value: unknown): { value: unknown; images: ContentItem[] } {
  const images: ContentItem[] = [];
  const walk = (v: unknown): unknown => {
    if (typeof v !== 'object' || v === null || v instanceof Uint8Array) return v;
    if (isImageValue(v)) {
      if (images.length >= MAX_PICTURES) throw new TooManyPicturesError(images.length + 1);
      images.push(imageItem(v));
      return { type: 'image', image: images.length };
    }
    if (Array.isArray(v)) {
      let out: unknown[] | undefined;
      for (let i = 0; i < v.length; i++) {
        const next = walk(v[i]);
        if (next !== v[i]) (out ??= v.slice())[i] = next;
      }
      return out ?? v;
    }
    let out: Record<string, unknown> | undefined;
    const o = v as Record<string, unknown>;
    for (const key of Object.keys(o)) {
      const next = walk(o[key]);
      if (next !== o[key]) (out ??= { ...o })[key] = next;
    }
    return out ?? v;
  };
  const replaced = walk(value);
  return { value: replaced, images };
}
