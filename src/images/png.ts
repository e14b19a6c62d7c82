/** PNG: the signature, then the IHDR chunk, which must come first and holds the size. */
import { ImageFormatError, checkSize, need } from './errors.js';
import type { ImageInfo } from './types.js';

const SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];

export function isPng(b: Uint8Array): boolean {
  return b.length >= 8 && SIGNATURE.every((v, i) => b[i] === v);
}

export function readPng(b: Uint8Array): ImageInfo {
  need(b, 24, 'PNG');
  const view = new DataView(b.buffer, b.byteOffset, b.byteLength);
  const length = view.getUint32(8);
  const type = String.fromCharCode(b[12]!, b[13]!, b[14]!, b[15]!);
  if (type !== 'IHDR' || length !== 13) {
    throw new ImageFormatError(
      `broken PNG header: the first chunk is '${type}' of ${length} bytes, not IHDR of 13`,
    );
  }
  need(b, 8 + 8 + 13, 'PNG');
  const width = view.getUint32(16);
  const height = view.getUint32(20);
  // The spec caps both at 2^31-1; a larger value is a lie, not a big picture.
  if (width > 0x7fffffff || height > 0x7fffffff) {
    throw new ImageFormatError(`broken PNG header: it states a size of ${width}x${height} pixels`);
  }
  checkSize(width, height, 'PNG');
  return { mimeType: 'image/png', width, height };
}
