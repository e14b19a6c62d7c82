/**
 * The picture header readers on real files of every format (tiny fixtures made with cjpeg and
 * cwebp, plus a PNG and a GIF written by hand), and on truncated and lying headers.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { ImageFormatError, readImageInfo } from '../../src/images/index.js';
import { ROOT } from '../helpers/moonhub-process.js';

const DIR = join(ROOT, 'test', 'fixtures', 'images');
const file = (name: string) => new Uint8Array(readFileSync(join(DIR, name)));

const FILES: [string, string][] = [
  ['rgba-7x5.png', 'image/png'],
  ['baseline-7x5.jpg', 'image/jpeg'],
  ['progressive-7x5.jpg', 'image/jpeg'],
  ['indexed-7x5.gif', 'image/gif'],
  ['lossy-7x5.webp', 'image/webp'],
  ['lossless-7x5.webp', 'image/webp'],
  ['lossy-alpha-7x5.webp', 'image/webp'],
];

function broken(bytes: Uint8Array, re: RegExp): void {
  assert.throws(
    () => readImageInfo(bytes),
    (err: unknown) => err instanceof ImageFormatError && re.test(err.message),
  );
}

function patched(name: string, at: number, values: number[]): Uint8Array {
  const b = file(name).slice();
  b.set(values, at);
  return b;
}

describe('picture headers', () => {
  for (const [name, mime] of FILES) {
    it(`${name}: ${mime}, 7x5`, () => {
      assert.deepEqual(readImageInfo(file(name)), { mimeType: mime, width: 7, height: 5 });
    });
  }

  it('the fixtures cover VP8, VP8L and VP8X WebP and SOF0/SOF2 JPEG', () => {
    const chunk = (n: string) => Buffer.from(file(n).slice(12, 16)).toString('latin1');
    assert.deepEqual(['lossy-7x5.webp', 'lossless-7x5.webp', 'lossy-alpha-7x5.webp'].map(chunk), [
      'VP8 ',
      'VP8L',
      'VP8X',
    ]);
    const hasMarker = (n: string, m: number) =>
      file(n).some((v, i, a) => v === 0xff && a[i + 1] === m);
    assert.ok(hasMarker('baseline-7x5.jpg', 0xc0));
    assert.ok(hasMarker('progressive-7x5.jpg', 0xc2));
  });

  it('every file cut anywhere inside its header raises', () => {
    const headerEnd: Record<string, number> = {
      'rgba-7x5.png': 24,
      'indexed-7x5.gif': 10,
      'lossy-7x5.webp': 30,
      'lossless-7x5.webp': 25,
      'lossy-alpha-7x5.webp': 30,
    };
    for (const [name, end] of Object.entries(headerEnd)) {
      for (let n = 0; n < end; n++) {
        assert.throws(
          () => readImageInfo(file(name).slice(0, n)),
          ImageFormatError,
          `${name} cut at ${n}`,
        );
      }
    }
    // A JPEG cut before its frame header.
    const jpg = file('progressive-7x5.jpg');
    const sof = jpg.findIndex((v, i) => v === 0xff && jpg[i + 1] === 0xc2);
    for (const n of [3, 4, 10, sof, sof + 5]) {
      assert.throws(() => readImageInfo(jpg.slice(0, n)), ImageFormatError, `JPEG cut at ${n}`);
    }
  });

  it('lying headers raise', () => {
    // PNG: a zero width; a first chunk that is not IHDR; an IHDR of the wrong length.
    broken(patched('rgba-7x5.png', 16, [0, 0, 0, 0]), /broken PNG header: it states a size of 0x5/);
    broken(patched('rgba-7x5.png', 12, [0x49, 0x44, 0x41, 0x54]), /first chunk is 'IDAT'/);
    broken(patched('rgba-7x5.png', 8, [0, 0, 0, 99]), /IHDR of 13/);
    // GIF: a zero height.
    broken(patched('indexed-7x5.gif', 8, [0, 0]), /broken GIF header: it states a size of 7x0/);
    // JPEG: a segment length running past the data; a size of zero in the frame header.
    broken(patched('baseline-7x5.jpg', 4, [0xff, 0xf0]), /broken JPEG header/);
    const jpg = file('baseline-7x5.jpg');
    const sof = jpg.findIndex((v, i) => v === 0xff && jpg[i + 1] === 0xc0);
    broken(
      patched('baseline-7x5.jpg', sof + 7, [0, 0]),
      /broken JPEG header: it states a size of 0x5/,
    );
    // JPEG: the scan starts without any frame header.
    broken(new Uint8Array([0xff, 0xd8, 0xff, 0xda, 0, 2]), /scan starts before any frame header/);
    // WebP: a RIFF size beyond the data; a chunk size beyond it; no VP8 start code; no VP8L
    // signature; an unknown first chunk.
    broken(patched('lossy-7x5.webp', 4, [0xff, 0xff, 0, 0]), /RIFF header states/);
    broken(patched('lossless-7x5.webp', 16, [0xff, 0xff, 0, 0]), /chunk VP8L states/);
    broken(patched('lossy-7x5.webp', 23, [0, 0, 0]), /no start code/);
    broken(patched('lossless-7x5.webp', 20, [0x00]), /no signature byte/);
    broken(patched('lossy-7x5.webp', 12, [0x41, 0x42, 0x43, 0x44]), /unknown first chunk 'ABCD'/);
  });

  it('bytes of no picture format raise', () => {
    broken(new Uint8Array(0), /not a picture: the data is empty/);
    broken(
      new TextEncoder().encode('hello, world'),
      /not a picture: the data is not PNG, JPEG, GIF or WebP/,
    );
    broken(new TextEncoder().encode('<svg xmlns="http://www.w3.org/2000/svg"/>'), /not a picture/);
  });
});
