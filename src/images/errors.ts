/** The one error the header readers raise: the bytes are not a picture whose size can be read. */
export class ImageFormatError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ImageFormatError';
  }
}

/** Throws unless `bytes` holds at least `end` bytes: a header cut short is a broken header. */
export function need(bytes: Uint8Array, end: number, format: string): void {
  if (bytes.length < end) {
    throw new ImageFormatError(
      `broken ${format} header: the data ends at byte ${bytes.length}, before the header does (${end} bytes needed)`,
    );
  }
}

export function checkSize(width: number, height: number, format: string): void {
  if (width <= 0 || height <= 0) {
    throw new ImageFormatError(
      `broken ${format} header: it states a size of ${width}x${height} pixels`,
    );
  }
}
