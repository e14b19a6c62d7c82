/** GIF (87a and 89a): the logical screen size follows the six-byte signature, little-endian. */
import { checkSize, need } from './errors.js';
import type { ImageInfo } from './types.js';

export function isGif(b: Uint8Array): boolean {
  return (
    b.length >= 6 &&
    b[0] === 0x47 &&
    b[1] === 0x49 &&
    b[2] === 0x46 &&
    b[3] === 0x38 &&
    (b[4] === 0x37 || b[4] === 0x39) &&
    b[5] === 0x61
  );
}

export function readGif(b: Uint8Array): ImageInfo {
  need(b, 13, 'GIF');
  const width = b[6]! | (b[7]! << 8);
  const height = b[8]! | (b[9]! << 8);
  checkSize(width, height, 'GIF');
  return { mimeType: 'image/gif', width, height };
}
