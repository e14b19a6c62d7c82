/**
 * JPEG: walks the marker segments from SOI to the first start-of-frame (baseline SOF0,
 * progressive SOF2, and the other SOFn), whose header holds the size. Every segment length is
 * checked against the data, so a lying length raises instead of reading past the end.
 */
import { ImageFormatError, checkSize, need } from './errors.js';
import type { ImageInfo } from './types.js';

export function isJpeg(b: Uint8Array): boolean {
  return b.length >= 3 && b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff;
}

/** SOF0..SOF15 except DHT (C4), JPG (C8) and DAC (CC), which share the range. */
function isStartOfFrame(marker: number): boolean {
  return marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc;
}

export function readJpeg(b: Uint8Array): ImageInfo {
  let i = 2;
  for (;;) {
    need(b, i + 2, 'JPEG');
    if (b[i] !== 0xff) {
      throw new ImageFormatError(
        `broken JPEG header: expected a marker at byte ${i}, found 0x${b[i]!.toString(16)}`,
      );
    }
    const marker = b[i + 1]!;
    if (marker === 0xff) {
      i++; // fill byte
      continue;
    }
    if (marker === 0xd9 || marker === 0xda) {
      throw new ImageFormatError(
        `broken JPEG header: ${marker === 0xda ? 'the scan starts' : 'the image ends'} before any frame header states a size`,
      );
    }
    // Markers without a length: TEM and RST0..7.
    if (marker === 0x01 || (marker >= 0xd0 && marker <= 0xd7)) {
      i += 2;
      continue;
    }
    need(b, i + 4, 'JPEG');
    const length = (b[i + 2]! << 8) | b[i + 3]!;
    if (length < 2) {
      throw new ImageFormatError(`broken JPEG header: segment at byte ${i} has length ${length}`);
    }
    if (isStartOfFrame(marker)) {
      need(b, i + 2 + 7, 'JPEG');
      if (length < 8) {
        throw new ImageFormatError(`broken JPEG header: frame header of ${length} bytes`);
      }
      const height = (b[i + 5]! << 8) | b[i + 6]!;
      const width = (b[i + 7]! << 8) | b[i + 8]!;
      checkSize(width, height, 'JPEG');
      return { mimeType: 'image/jpeg', width, height };
    }
    i += 2 + length;
  }
}
