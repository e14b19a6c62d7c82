/**
 * WebP: a RIFF container whose first chunk is VP8 (lossy), VP8L (lossless) or VP8X (extended,
 * holding the canvas size). The RIFF size and the chunk size must fit the data.
 */
import { ImageFormatError, checkSize, need } from './errors.js';
import type { ImageInfo } from './types.js';

function ascii(b: Uint8Array, at: number): string {
  return String.fromCharCode(b[at]!, b[at + 1]!, b[at + 2]!, b[at + 3]!);
}

export function isWebp(b: Uint8Array): boolean {
  return b.length >= 12 && ascii(b, 0) === 'RIFF' && ascii(b, 8) === 'WEBP';
}

export function readWebp(b: Uint8Array): ImageInfo {
  need(b, 20, 'WebP');
  const view = new DataView(b.buffer, b.byteOffset, b.byteLength);
  const riffSize = view.getUint32(4, true);
  if (riffSize + 8 > b.length) {
    throw new ImageFormatError(
      `broken WebP header: the RIFF header states ${riffSize + 8} bytes, the data has ${b.length}`,
    );
  }
  const chunk = ascii(b, 12);
  const chunkSize = view.getUint32(16, true);
  if (20 + chunkSize > b.length) {
    throw new ImageFormatError(
      `broken WebP header: chunk ${chunk} states ${chunkSize} bytes, the data has ${b.length - 20}`,
    );
  }
  let width: number;
  let height: number;
  if (chunk === 'VP8 ') {
    need(b, 30, 'WebP');
    if (b[23] !== 0x9d || b[24] !== 0x01 || b[25] !== 0x2a) {
      throw new ImageFormatError('broken WebP header: the VP8 frame has no start code');
    }
    width = view.getUint16(26, true) & 0x3fff;
    height = view.getUint16(28, true) & 0x3fff;
  } else if (chunk === 'VP8L') {
    need(b, 25, 'WebP');
    if (b[20] !== 0x2f) {
      throw new ImageFormatError('broken WebP header: the VP8L chunk has no signature byte');
    }
    const bits = view.getUint32(21, true);
    width = (bits & 0x3fff) + 1;
    height = ((bits >>> 14) & 0x3fff) + 1;
  } else if (chunk === 'VP8X') {
    need(b, 30, 'WebP');
    width = (b[24]! | (b[25]! << 8) | (b[26]! << 16)) + 1;
    height = (b[27]! | (b[28]! << 8) | (b[29]! << 16)) + 1;
  } else {
    throw new ImageFormatError(`broken WebP header: unknown first chunk '${chunk}'`);
  }
  checkSize(width, height, 'WebP');
  return { mimeType: 'image/webp', width, height };
}
