/**
 * `mcp.image(source)` (LUA_API §3.3): a picture as a value that can stand anywhere in a result.
 * The source is a VFS path, the bytes themselves, or a table carrying base64 (`data`, or a
 * capture's `imageBase64` with its `path`). Format and size come from the header (src/images/).
 */
import { readFileSync } from 'node:fs';
import { LuaArgumentError } from '../lua/errors.js';
import type { HostFunctionSpec } from '../lua/state.js';
import { ImageFormatError, looksLikeImage, readImageInfo } from '../images/index.js';
import { badArgument } from './args.js';
import { locate } from './vfs.js';

export interface ImageValue {
  type: 'image';
  mime_type: string;
  data: string;
  bytes: number;
  width: number;
  height: number;
  path?: string;
}

/** Builds the image value of some bytes; throws ImageFormatError on a broken header. */
export function imageValue(bytes: Uint8Array, path?: string): ImageValue {
  const info = readImageInfo(bytes);
  const value: ImageValue = {
    type: 'image',
    mime_type: info.mimeType,
    data: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64'),
    bytes: bytes.length,
    width: info.width,
    height: info.height,
  };
  if (path !== undefined) value.path = path;
  return value;
}

function toBytes(s: string | Uint8Array): Uint8Array {
  return typeof s === 'string' ? Buffer.from(s, 'utf8') : s;
}

function fromBase64(text: unknown, field: string): Uint8Array {
  if (typeof text !== 'string' || !/^[A-Za-z0-9+/=\s_-]*$/.test(text)) {
    throw new LuaArgumentError(`mcp.image: the table's '${field}' is not base64 text`);
  }
  return Buffer.from(text, 'base64');
}

function readPath(root: string | undefined, path: string): Uint8Array {
  if (root === undefined) {
    throw new LuaArgumentError(`mcp.image: ${path}: this state has no /source/ folder`);
  }
  const where = locate(root, path);
  if (typeof where === 'string') throw new LuaArgumentError(`mcp.image: ${where}`);
  try {
    return readFileSync(where.disk);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new LuaArgumentError(
      // Node's own message holds the absolute path on the hub's disk: only its code goes out.
      `mcp.image: ${path}: ${code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'is a directory' : `cannot be read (${code ?? 'error'})`}`,
    );
  }
}

/** The `mcp.image` host function; `root` is the folder behind `/source/`. */
export function imageFunction(root: () => string | undefined): HostFunctionSpec {
  return {
    fn: (args, call) => {
      const source = args[0];
      let bytes: Uint8Array;
      let path: string | undefined;
      if (typeof source === 'string' || source instanceof Uint8Array) {
        const raw = toBytes(source);
        if (looksLikeImage(raw) || typeof source !== 'string') {
          bytes = raw;
        } else {
          path = source;
          bytes = readPath(root(), source);
        }
      } else if (typeof source === 'object' && source !== null && !Array.isArray(source)) {
        const t = source as Record<string, unknown>;
        if (t.data !== undefined) bytes = fromBase64(t.data, 'data');
        else if (t.imageBase64 !== undefined) bytes = fromBase64(t.imageBase64, 'imageBase64');
        else
          throw new LuaArgumentError(
            "mcp.image: the table carries no picture (expected 'data' or 'imageBase64' in base64)",
          );
        if (typeof t.path === 'string') path = t.path;
      } else {
        throw badArgument(1, 'image', 'string or table', call);
      }
      try {
        return imageValue(bytes, path);
      } catch (err) {
        if (err instanceof ImageFormatError) {
          throw new LuaArgumentError(`mcp.image: ${path ? `${path}: ` : ''}${err.message}`);
        }
        throw err;
      }
    },
  };
}
