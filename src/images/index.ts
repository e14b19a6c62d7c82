/**
 * Reads a picture's format and size from its header, without decoding it (LUA_API §3.3). Only
 * PNG, JPEG, GIF and WebP are pictures here; other bytes, or a header that is cut short, lies
 * about its lengths or states no size, raise an ImageFormatError.
 */
import { ImageFormatError } from './errors.js';
import { isGif, readGif } from './gif.js';
import { isJpeg, readJpeg } from './jpeg.js';
import { isPng, readPng } from './png.js';
import type { ImageInfo } from './types.js';
import { isWebp, readWebp } from './webp.js';

export { ImageFormatError } from './errors.js';
export type { ImageInfo } from './types.js';

/** Whether the bytes start like one of the four formats (the header may still be broken). */
export function looksLikeImage(b: Uint8Array): boolean {
  return isPng(b) || isJpeg(b) || isGif(b) || isWebp(b);
}

export function readImageInfo(b: Uint8Array): ImageInfo {
  if (isPng(b)) return readPng(b);
  if (isJpeg(b)) return readJpeg(b);
  if (isGif(b)) return readGif(b);
  if (isWebp(b)) return readWebp(b);
  throw new ImageFormatError(
    b.length === 0
      ? 'not a picture: the data is empty'
      : 'not a picture: the data is not PNG, JPEG, GIF or WebP',
  );
}
