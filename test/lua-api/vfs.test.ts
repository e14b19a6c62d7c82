/**
 * `vfs` (LUA_API §1.1): reads under /source/, writes only under /source/tmp/, refuses paths that
 * escape (by `..` or a symlink), and answers `nil, err` on failure.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { LuaState } from '../../src/lua/state.js';
import { installApi } from '../../src/lua-api/index.js';
import { silentLogger } from '../../src/log.js';
import { Registry } from '../../src/registry/registry.js';

let root: string;
let outside: string;
let state: LuaState;
let folderless: LuaState;

async function run(s: LuaState, code: string): Promise<unknown[]> {
  return s.call(s.load(code, '@vfs-test.lua'), []);
}

before(async () => {
  root = mkdtempSync(join(tmpdir(), 'moonhub-vfs-'));
  outside = mkdtempSync(join(tmpdir(), 'moonhub-vfs-outside-'));
  writeFileSync(join(outside, 'secret.txt'), 'secret');
  mkdirSync(join(root, 'data'));
  writeFileSync(join(root, 'data', 'a.txt'), 'alpha');
  writeFileSync(join(root, 'bytes.bin'), Buffer.from([0, 255, 1]));
  symlinkSync(outside, join(root, 'escape'));
  const registry = new Registry();
  state = await LuaState.create({ name: 'vfs' });
  installApi(state, { registry, owner: 'vfs', logger: silentLogger, root });
  folderless = await LuaState.create({ name: 'single' });
  installApi(folderless, { registry, owner: 'single', logger: silentLogger });
});
after(() => {
  state.close();
  folderless.close();
});

describe('vfs', () => {
  it('reads files by /source/ and relative paths, bytes intact', async () => {
    const [a, b, n, first, last] = await run(
      state,
      `local b = vfs.read("bytes.bin")
       return vfs.read("/source/data/a.txt"), vfs.read("data/a.txt"), #b, b:byte(1), b:byte(2)`,
    );
    assert.deepEqual([a, b, n, first, last], ['alpha', 'alpha', 3, 0, 255]);
  });

  it('lists and tests existence', async () => {
    const [list, yes, no] = await run(
      state,
      'return vfs.list("/source/data"), vfs.exists("data/a.txt"), vfs.exists("nope")',
    );
    assert.deepEqual(list, ['a.txt']);
    assert.equal(yes, true);
    assert.equal(no, false);
  });

  it('writes only under /source/tmp/', async () => {
    const [ok, back, denied, err] = await run(
      state,
      `local ok = vfs.write("/source/tmp/out/note.txt", "written")
       local back = vfs.read("tmp/out/note.txt")
       local denied, err = vfs.write("data/a.txt", "overwrite")
       return ok, back, denied, err`,
    );
    assert.equal(ok, true);
    assert.equal(back, 'written');
    assert.equal(readFileSync(join(root, 'tmp', 'out', 'note.txt'), 'utf8'), 'written');
    assert.equal(denied, undefined);
    assert.match(String(err), /read-only \(only \/source\/tmp\/ is writable\)/);
    assert.equal(readFileSync(join(root, 'data', 'a.txt'), 'utf8'), 'alpha');
  });

  it('refuses paths that escape the root, by .., absolute paths or a symlink', async () => {
    for (const path of ['../secret.txt', '/source/../x', '/etc/passwd', 'escape/secret.txt']) {
      const [value, err] = await run(state, `return vfs.read(${JSON.stringify(path)})`);
      assert.equal(value, undefined, path);
      assert.match(String(err), /outside \/source\//, path);
    }
    const [exists] = await run(state, 'return vfs.exists("escape/secret.txt")');
    assert.equal(exists, false);
  });

  it('answers nil, err for a missing file and raises on misuse', async () => {
    const [value, err] = await run(state, 'return vfs.read("missing.txt")');
    assert.equal(value, undefined);
    assert.equal(err, 'no such file or directory');
    await assert.rejects(
      run(state, 'return vfs.read(42)'),
      /bad argument #1 to 'read' \(string expected, got number\)/,
    );
  });

  it('tells a single-file plugin it has no folder', async () => {
    const [value, err] = await run(folderless, 'return vfs.read("x")');
    assert.equal(value, undefined);
    assert.match(String(err), /no folder of its own/);
  });
});
