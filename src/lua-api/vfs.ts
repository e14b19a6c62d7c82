/**
 * `vfs.read/write/list/exists` (LUA_API §1.1): the only way Lua reaches files. `/source/` is the
 * plugin's folder (or a script's root); relative paths resolve under it; `/source/tmp/` is the one
 * writable place; a path that escapes the root, by `..` or by a symlink, is refused. Failures
 * return `nil, err`, as Lua's own io functions do.
 */
import {
  closeSync,
  constants,
  existsSync,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  realpathSync,
  writeSync,
} from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import type { LuaState } from '../lua/state.js';
import { LuaMulti } from '../lua/state.js';
import { checkString } from './args.js';
import { LuaArgumentError } from '../lua/errors.js';
import { WriteQuota } from './write-quota.js';

const PREFIX = '/source/';

/** Maps a VFS path onto the disk, or explains why not. */
export function locate(root: string, path: string): { disk: string; rel: string } | string {
  if (path.includes('\0')) return `${path}: invalid path`;
  let rel: string;
  if (path === '/source' || path === PREFIX) rel = '';
  else if (path.startsWith(PREFIX)) rel = path.slice(PREFIX.length);
  else if (path.startsWith('/')) return `${path}: outside /source/`;
  else rel = path;
  const disk = resolve(root, rel);
  const back = relative(root, disk);
  if (back.startsWith('..') || resolve(root, back) !== disk) return `${path}: outside /source/`;
  // A symlink may point out of the root: check the real path of the deepest part that exists.
  // lstat, not exists: a dangling symlink "does not exist" yet a write would follow it out.
  let probe = disk;
  while (lstatSync(probe, { throwIfNoEntry: false }) === undefined && probe !== root)
    probe = dirname(probe);
  try {
    const real = realpathSync(probe);
    const realRoot = realpathSync(root);
    if (real !== realRoot && !real.startsWith(realRoot + sep))
      return `${path}: leads outside /source/`;
  } catch {
    return `${path}: cannot be resolved`;
  }
  return { disk, rel: back };
}

function failure(err: unknown): LuaMulti {
  const e = err as NodeJS.ErrnoException;
  // Node's own messages carry the absolute path on the hub's disk: never hand those to Lua.
  const reason =
    e.code === 'ENOENT'
      ? 'no such file or directory'
      : e.code === 'EISDIR'
        ? 'is a directory'
        : e.code === 'ELOOP'
          ? 'is a symbolic link (vfs does not write through links)'
          : e.code === 'EACCES' || e.code === 'EPERM'
            ? 'permission denied'
            : e.code === 'ENOTDIR'
              ? 'not a directory'
              : `input/output error (${e.code ?? 'unknown'})`;
  return new LuaMulti([undefined, reason]);
}

export interface VfsOptions {
  /** Bytes `/source/tmp/` may hold; unlimited when absent. */
  writeBytes?: number;
  /** The config key of that quota, for its error (default plugin_limits.write_bytes). */
  writeKey?: string;
  /** When set, every write is refused with this reason (a shared, read-only root). */
  readOnly?: string;
}

/** Writes `data` to `disk` without following a symlink there (the last hop of an escape). */
function writeNoFollow(disk: string, data: string | Uint8Array): void {
  const fd = openSync(
    disk,
    constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC | constants.O_NOFOLLOW,
    0o644,
  );
  try {
    const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
    let off = 0;
    while (off < bytes.byteLength) off += writeSync(fd, bytes, off, bytes.byteLength - off);
  } finally {
    closeSync(fd);
  }
}

/**
 * `root` undefined: the state has no folder (a single-file plugin), and every call says so. A
 * function is asked at each call (an `execute` state gets its run's scratch folder late).
 */
export function installVfs(
  state: LuaState,
  rootOf: string | undefined | (() => string | undefined),
  opts: VfsOptions = {},
): void {
  const rootNow = typeof rootOf === 'function' ? rootOf : () => rootOf;
  const quota =
    opts.writeBytes === undefined
      ? undefined
      : new WriteQuota(
          () => {
            const r = rootNow();
            return r === undefined ? undefined : join(r, 'tmp');
          },
          opts.writeBytes,
          opts.writeKey ?? 'plugin_limits.write_bytes',
        );
  const noRoot = new LuaMulti([
    undefined,
    'this plugin has no folder of its own: make it a folder with init.lua to use vfs',
  ]);
  const withPath = (
    fname: string,
    body: (disk: string, rel: string, args: unknown[], root: string) => unknown,
  ) => ({
    fn: (args: unknown[], call: Parameters<typeof checkString>[1]) => {
      const path = checkString(args, call, 1, fname);
      const root = rootNow();
      if (root === undefined) return noRoot;
      const where = locate(root, path);
      if (typeof where === 'string') return new LuaMulti([undefined, where]);
      try {
        return body(where.disk, where.rel, args, root);
      } catch (err) {
        return failure(err);
      }
    },
  });
  state.defineLibrary('vfs', {
    read: withPath('read', (disk) => {
      const bytes = readFileSync(disk);
      return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    }),
    write: withPath('write', (disk, rel, args, root) => {
      const data = args[1];
      if (typeof data !== 'string' && !(data instanceof Uint8Array)) {
        throw new LuaArgumentError(
          `bad argument #2 to 'write' (string expected, got ${data === undefined ? 'nil' : typeof data})`,
        );
      }
      if (rel !== 'tmp' && !rel.startsWith(`tmp${sep}`)) {
        return new LuaMulti([
          undefined,
          `/source/${rel.split(sep).join('/')}: read-only (only /source/tmp/ is writable)`,
        ]);
      }
      if (opts.readOnly !== undefined)
        return new LuaMulti([undefined, `/source/${rel.split(sep).join('/')}: ${opts.readOnly}`]);
      mkdirSync(dirname(disk), { recursive: true });
      // The folders made just now may race a symlink swap: check the parent again before writing.
      const again = locate(root, `/source/${rel.split(sep).join('/')}`);
      if (typeof again === 'string') return new LuaMulti([undefined, again]);
      const size = typeof data === 'string' ? Buffer.byteLength(data, 'utf8') : data.byteLength;
      const refused = quota?.charge(disk, size);
      if (refused !== undefined) return new LuaMulti([undefined, refused]);
      writeNoFollow(disk, data);
      return true;
    }),
    list: withPath('list', (disk) => readdirSync(disk).sort()),
    exists: {
      fn: (args, call) => {
        const path = checkString(args, call, 1, 'exists');
        const root = rootNow();
        if (root === undefined) return false;
        const where = locate(root, path);
        return typeof where !== 'string' && existsSync(where.disk);
      },
    },
  });
}
