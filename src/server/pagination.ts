/**
 * Cursor pagination for the list methods. A cursor names the last key of the previous page (not an
 * offset), so a page boundary stays put when entries before it are added or removed between
 * calls. The cursor is opaque to clients: base64url of a tagged key.
 */
import { wireError } from '../errors.js';

export const DEFAULT_PAGE_SIZE = 100;
const TAG = 'k1:';

export interface Page<T> {
  items: T[];
  nextCursor?: string;
}

export function encodeCursor(key: string): string {
  return Buffer.from(TAG + key, 'utf8').toString('base64url');
}

/** Decodes a cursor to its key; anything this server did not make answers `invalid_cursor`. */
export function decodeCursor(cursor: unknown): string {
  if (typeof cursor !== 'string' || cursor.length === 0 || cursor.length > 8192) {
    throw wireError('invalid_cursor');
  }
  const text = Buffer.from(cursor, 'base64url').toString('utf8');
  if (!text.startsWith(TAG) || Buffer.from(text, 'utf8').toString('base64url') !== cursor) {
    throw wireError('invalid_cursor');
  }
  return text.slice(TAG.length);
}

/**
 * One page of `list`, which must be sorted ascending by `keyOf` with JS string order (the
 * registry's lists are). Finds the cursor's position by binary search.
 */
export function paginate<T>(
  list: readonly T[],
  keyOf: (item: T) => string,
  cursor: unknown,
  pageSize: number,
): Page<T> {
  let start = 0;
  if (cursor !== undefined) {
    const after = decodeCursor(cursor);
    let lo = 0;
    let hi = list.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (keyOf(list[mid]!) <= after) lo = mid + 1;
      else hi = mid;
    }
    start = lo;
  }
  if (start === 0 && list.length <= pageSize) return { items: list as T[] };
  const end = Math.min(start + pageSize, list.length);
  const items = list.slice(start, end);
  return end < list.length ? { items, nextCursor: encodeCursor(keyOf(list[end - 1]!)) } : { items };
}
