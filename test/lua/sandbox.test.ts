/** The sandbox: what user code must not reach, and that a refusal leaves the state usable. */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { type LuaState } from '../../src/lua/state.js';
import { LuaError } from '../../src/lua/errors.js';
import { newState, run } from './helpers.js';

const MODULES: Record<string, string> = {
  util: `
    loads = (loads or 0) + 1
    local M = {}
    function M.twice(x) return 2 * x end
    return M`,
  broken: 'return +',
  noreturn: 'side = "effect"',
};

let state: LuaState;
const asked: string[] = [];
before(async () => {
  state = await newState({
    findModule: (name) => {
      asked.push(name);
      if (name.includes('..') || name.startsWith('/') || name.includes('\\')) {
        return `module '${name}' refused: outside the plugin folder`;
      }
      const source = MODULES[name];
      return source === undefined
        ? `module '${name}' not found`
        : { source, chunkname: `${name}.lua` };
    },
  });
});
after(() => state.close());

/** Asserts the next call on the state still works. */
async function stillWorks(): Promise<void> {
  assert.deepEqual(
    await run(state, 'local t = {} for i = 1, 3 do t[i] = i * i end return table.concat(t, ",")'),
    ['1,4,9'],
  );
}

describe('absent libraries and functions', () => {
  const absent = [
    'io',
    'os.execute',
    'os.exit',
    'os.getenv',
    'os.remove',
    'os.rename',
    'os.tmpname',
    'string.dump',
    'debug.getregistry',
    'debug.sethook',
    'debug.getinfo',
    'debug.setupvalue',
    'dofile',
    'loadfile',
    'package.loadlib',
    'package.cpath',
    'package.searchers',
  ];
  for (const name of absent) {
    it(`${name} is nil`, async () => {
      const [type] = await run(state, `return type(${name})`);
      assert.equal(type, 'nil');
      // Calling it fails with Lua's ordinary message naming it.
      await assert.rejects(run(state, `${name}("x")`), (err: Error) => {
        assert.ok(err instanceof LuaError);
        assert.match(err.message, /attempt to (call|index) a nil value/);
        return true;
      });
      await stillWorks();
    });
  }

  it('what stays: debug.traceback, os.time/clock/date, string/table/math/utf8/coroutine', async () => {
    const [facts] = await run(
      state,
      `return { tb = type(debug.traceback), time = type(os.time()), clock = type(os.clock()),
                date = type(os.date("%Y")), fmt = string.format("%d", 7), utf8 = utf8.len("é"),
                co = type(coroutine.wrap) }`,
    );
    assert.deepEqual(facts, {
      tb: 'function',
      time: 'number',
      clock: 'number',
      date: 'string',
      fmt: '7',
      utf8: 1,
      co: 'function',
    });
    const [tb] = await run(state, 'return debug.traceback("here")');
    assert.match(tb as string, /^here\nstack traceback:/);
  });
});

describe('load', () => {
  it('a binary chunk is refused with the documented message', async () => {
    const [fn, msg] = await run(state, 'return load("\\27Lua\\84\\0")');
    assert.equal(fn, undefined);
    assert.match(msg as string, /attempt to load a binary chunk \(mode is 't'\)/);
    // Asking for mode "b" explicitly changes nothing.
    const [fn2, msg2] = await run(state, 'return load("\\27Lua", "c", "b")');
    assert.equal(fn2, undefined);
    assert.match(msg2 as string, /attempt to load a binary chunk \(mode is 't'\)/);
    await stillWorks();
  });

  it('text chunks load, with a custom environment too', async () => {
    const out = await run(
      state,
      `local f = load("return 1 + 2") local g = load("x = 5 return x * y", "=env", "t", { y = 3 })
       local env_print = load("return print", "=env", "t", {})()
       return f(), g(), x, env_print`,
    );
    // `x` was set in the custom environment, not in _G; the empty env has no print.
    assert.deepEqual(out, [3, 15, undefined, undefined]);
    const [fnOk, err] = await run(state, 'return load("return +")');
    assert.equal(fnOk, undefined);
    assert.match(err as string, /unexpected symbol/);
  });

  it('the state only loads text source from the host side too', () => {
    assert.throws(
      () => state.load('\x1bLua', 'bin'),
      /attempt to load a binary chunk \(mode is 't'\)/,
    );
  });
});

describe('collectgarbage', () => {
  it('"stop" and other options that change the collector are refused with a message', async () => {
    for (const opt of ['stop', 'restart', 'incremental', 'generational', 'setpause']) {
      await assert.rejects(run(state, `collectgarbage("${opt}")`), (err: Error) => {
        assert.match(
          err.message,
          new RegExp(`collectgarbage\\('${opt}'\\) is not allowed in the sandbox`),
        );
        return true;
      });
    }
    const [running, count] = await run(
      state,
      'collectgarbage() return collectgarbage("isrunning"), collectgarbage("count")',
    );
    assert.equal(running, true);
    assert.equal(typeof count, 'number');
    await stillWorks();
  });
});

describe('require', () => {
  it("a name outside the folder is refused by findModule, at the caller's line", async () => {
    await assert.rejects(
      run(state, 'local m = require("../../etc/passwd")\nreturn m'),
      (err: Error) => {
        assert.ok(err instanceof LuaError);
        assert.equal(
          err.message,
          "test:1: module '../../etc/passwd' refused: outside the plugin folder",
        );
        return true;
      },
    );
    const [ok, msg] = await run(state, 'return pcall(require, "/abs/path")');
    assert.equal(ok, false);
    assert.match(msg as string, /module '\/abs\/path' refused/);
    assert.ok(asked.includes('../../etc/passwd'));
    await stillWorks();
  });

  it('an unknown module is not found', async () => {
    await assert.rejects(
      run(state, 'local m = require("nope")'),
      /test:1: module 'nope' not found/,
    );
    await assert.rejects(
      run(state, 'local m = require(42)'),
      /bad argument #1 to 'require' \(string expected, got number\)/,
    );
  });

  it('a found module loads once and is cached in package.loaded', async () => {
    const before = asked.filter((n) => n === 'util').length;
    const [same, twice, loads, cached] = await run(
      state,
      `local a = require("util") local b = require("util")
       return a == b, a.twice(21), loads, package.loaded.util == a`,
    );
    assert.deepEqual([same, twice, loads, cached], [true, 42, 1, true]);
    // Cached across calls on the same state as well: findModule is not asked again.
    const [loads2] = await run(state, 'local m = require("util") return loads');
    assert.equal(loads2, 1);
    assert.equal(asked.filter((n) => n === 'util').length - before, 1);
  });

  it('a module that returns nothing is cached as true; a syntax error names the module file', async () => {
    assert.deepEqual(await run(state, 'return require("noreturn"), side'), [true, 'effect']);
    await assert.rejects(
      run(state, 'local m = require("broken")'),
      /broken\.lua:1: unexpected symbol/,
    );
    await stillWorks();
  });
});
