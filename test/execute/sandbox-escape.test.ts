/**
 * A sandbox escape suite run against execute: string metatables, coroutine tricks, load with a
 * custom env, collectgarbage abuse, deep recursion, string.rep bombs and pattern blowups. Each is
 * contained (by the sandbox, a fresh state per run, or a limit) with a clear error, and the next
 * run starts clean.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { registerCodeMode, type CodeModeBuiltins } from '../../src/execute/index.js';
import { silentLogger } from '../../src/log.js';
import { Registry } from '../../src/registry/registry.js';
import type { ToolResult } from '../../src/registry/types.js';
import { ROOT } from '../helpers/moonhub-process.js';

let registry: Registry;
let builtins: CodeModeBuiltins;
const ctx = { hub_id: 'escape-hub' };

before(() => {
  registry = new Registry({ hubId: 'escape-hub' });
  builtins = registerCodeMode(
    registry,
    {
      timeoutMs: 3000,
      instructions: 100_000_000,
      memoryBytes: 64 * 1024 * 1024,
      graceMs: 200,
      root: ROOT,
    },
    silentLogger,
  );
});
after(() => builtins.close());

async function execute(code: string, timeout_ms?: number): Promise<ToolResult> {
  const args: Record<string, unknown> = { code };
  if (timeout_ms !== undefined) args.timeout_ms = timeout_ms;
  return registry.callTool('execute', args, ctx);
}

async function value(code: string): Promise<unknown> {
  const r = await execute(code);
  assert.equal(r.isError, undefined, JSON.stringify(r).slice(0, 400));
  return (r.structuredContent as { result: unknown }).result;
}

async function failure(code: string, timeout_ms?: number): Promise<string> {
  const r = await execute(code, timeout_ms);
  assert.equal(r.isError, true, `expected an error, got ${JSON.stringify(r).slice(0, 400)}`);
  return String(r.content[0]!.text);
}

describe('sandbox escapes against execute', () => {
  it('string metatables: changes stay in their own run', async () => {
    assert.equal(
      await value(
        `getmetatable("").__index.upper = function() return "pwned" end
         getmetatable("").__add = function() return "added" end
         leaked_global = true
         return ("a"):upper() .. ("x" + "y")`,
      ),
      'pwnedadded',
    );
    assert.deepEqual(
      await value(
        `return { ("a"):upper(), leaked_global == nil, (pcall(function() return "x" + "y" end)) }`,
      ),
      ['A', true, false],
    );
    assert.equal(
      await value(`return getmetatable("").__index.dump == nil and string.dump == nil`),
      true,
    );
  });

  it('coroutine tricks: yields, runaway coroutines and coroutine floods are contained', async () => {
    assert.match(
      await failure(`coroutine.yield("escape")`),
      /attempt to yield from outside a coroutine/,
    );
    assert.match(
      await failure(`local co = coroutine.wrap(function() while true do end end) co()`),
      /instruction budget exceeded|^timeout: /,
    );
    assert.match(
      await failure(
        `local co = coroutine.create(function() while true do pcall(coroutine.yield) end end)
         while true do coroutine.resume(co) end`,
      ),
      /instruction budget exceeded|^timeout/,
    );
    assert.match(
      await failure(`local all = {} while true do all[#all + 1] = coroutine.create(print) end`),
      /memory limit exceeded|instruction budget exceeded|^timeout: /,
    );
  });

  it('load with a custom env (or _G) reaches nothing that is not there; binary chunks are refused', async () => {
    assert.deepEqual(
      await value(
        `local env = setmetatable({}, { __index = _G })
         local f = load("return io, os.execute, os.exit, os.getenv, debug.sethook, package.loadlib, dofile, loadfile", "=x", "t", env)
         local r = table.pack(f())
         local out = {} for i = 1, r.n do out[i] = r[i] == nil end
         return out`,
      ),
      [true, true, true, true, true, true, true, true],
    );
    assert.match(
      String(await value(`return select(2, load("\\27Lua\\x54\\0", "=bin", "b"))`)),
      /attempt to load a binary chunk \(mode is 't'\)/,
    );
    assert.match(await failure(`require("io")`), /module 'io' not found/);
  });

  it('collectgarbage abuse: forbidden options raise, a GC loop meets the budget', async () => {
    for (const opt of ['stop', 'generational', 'incremental', 'setpause']) {
      assert.match(
        await failure(`collectgarbage("${opt}")`),
        new RegExp(`collectgarbage\\('${opt}'\\) is not allowed in the sandbox`),
      );
    }
    assert.match(
      await failure(`while true do collectgarbage() end`, 1000),
      /instruction budget exceeded|timeout/,
    );
  });

  it('deep recursion ends with a stack overflow error', async () => {
    assert.match(
      await failure(`local function f(n) return 1 + f(n + 1) end return f(1)`),
      /stack overflow/,
    );
    assert.match(
      await failure(
        `local t = setmetatable({}, { __index = function(t, k) return t[k] end }) return t.x`,
      ),
      /stack overflow|C stack overflow/,
    );
    assert.match(
      await failure(
        `return assert(load(string.rep("(", 100000) .. "1" .. string.rep(")", 100000)))()`,
      ),
      /too many|overflow|levels/,
    );
  });

  it('string.rep bombs meet the memory limit', async () => {
    assert.match(
      await failure(`return #string.rep("x", 1 << 40)`),
      /memory limit exceeded|resulting string too large/,
    );
    assert.match(
      await failure(`local s = "x" for _ = 1, 40 do s = s .. s end return #s`),
      /memory limit exceeded/,
    );
    assert.match(
      await failure(`local t = {} for i = 1, 1e6 do t[i] = string.rep("y", 1000) .. i end`),
      /memory limit exceeded/,
    );
  });

  it('pattern-matching blowups get the hard stop', async () => {
    for (const code of [
      `return ("a"):rep(200):find(".-.-.-.-.-b")`,
      `return select(2, string.gsub(("a"):rep(200), ".-.-.-.-.-b", ""))`,
    ]) {
      assert.match(
        await failure(code, 400),
        /^timeout: the script ran longer than its 400 ms limit and was stopped hard/,
      );
    }
  });

  it('after all of that, a plain script runs in a clean state', async () => {
    assert.deepEqual(await value(`return { type(io), type(os.exit), ("ok"):upper() }`), [
      'nil',
      'nil',
      'OK',
    ]);
  });
});

describe('execute script globals', () => {
  it('log.* writes to the captured output; vfs reads under /source/', async () => {
    const r = await execute(
      `log.info("hello", { n = 1 }) log.warn("careful") return vfs.exists("package.json")`,
    );
    assert.deepEqual(r.structuredContent, {
      result: true,
      output: '[info] hello {"n":1}\n[warn] careful',
    });
  });
});

describe('execute with JS tools', () => {
  it('task.spawn overlaps waits; a result that cannot reach the worker is an error, not a crash', async () => {
    registry.addTool('odd', {
      name: 'odd',
      description: 'Returns a function inside its result',
      inputSchema: { type: 'object' },
      handler: async () => ({ content: [{ type: 'text', text: 'x', oops: () => 1 }] }),
    });
    const r = await value(
      `local a = task.spawn(function() task.sleep(100) return "a" end)
       local b = task.spawn(function() task.sleep(100) return "b" end)
       local both = task.await({ a, b })
       local odd = task.await(mcp.call("odd"))
       return { both[1].value .. both[2].value, odd.is_error, odd.content }`,
    );
    const [ab, isError, content] = r as [string, boolean, string];
    assert.equal(ab, 'ab');
    assert.equal(isError, true);
    assert.match(content, /the result of 'odd' cannot be passed to the script/);
  });
});
