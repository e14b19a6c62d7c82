/**
 * `vfs.read/write/list/exists` (LUA_API §1.1): the only way Lua reaches files. `/source/` is the
 * plugin's folder (or a script's root); relative paths resolve under it; `/source/tmp/` is the one
 * writable place; a path that escapes the root, by `..` or by a symlink, is refused. Failures
 * return `nil, err`, as Lua's own io functions do.
 */
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  realpathSync,
  writeFileSync,
} from 'node:fs';
import { dirname, relative, resolve, sep } from 'node:path';
import type { LuaState } from '../lua/state.js';
import { LuaMulti } from '../lua/state.js';
import { checkString } from './args.js';
import { LuaArgumentError } from '../lua/errors.js';

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
  let probe = disk;
  while (!existsSync(probe) && probe !== root) probe = dirname(probe);
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
  const reason =
    e.code === 'ENOENT'
      ? 'no such file or directory'
      : e.code === 'EISDIR'
        ? 'is a directory'
        : e.message;
  return new LuaMulti([undefined, reason]);
}

/** `root` undefined: the state has no folder (a single-file plugin), and every call says so. */
export function installVfs(state: LuaState, root: string | undefined): void {
  const noRoot = new LuaMulti([
    undefined,
    'this plugin has no folder of its own: make it a folder with init.lua to use vfs',
  ]);
  const withPath = (
    fname: string,
    body: (disk: string, rel: string, args: unknown[]) => unknown,
  ) => ({
    fn: (args: unknown[], call: Parameters<typeof checkString>[1]) => {
      const path = checkString(args, call, 1, fname);
      if (root === undefined) return noRoot;
      const where = locate(root, path);
      if (typeof where === 'string') return new LuaMulti([undefined, where]);
      try {
        return body(where.disk, where.rel, args);
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
    write: withPath('write', (disk, rel, args) => {
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
      mkdirSync(dirname(disk), { recursive: true });
      writeFileSync(disk, data);
      return true;
    }),
    list: withPath('list', (disk) => readdirSync(disk).sort()),
    exists: {
      fn: (args, call) => {
        const path = checkString(args, call, 1, 'exists');
        if (root === undefined) return false;
        const where = locate(root, path);
        return typeof where !== 'string' && existsSync(where.disk);
      },
    },
  });
}
