/**
 * Setup chunks (the prelude, `exec` snippets) are compiled once per wasm module and loaded as
 * bytecode afterwards: a later state must behave exactly like the first, error positions
 * included, user code must still be text only, and the cache must stay bounded.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { LuaState } from '../../src/lua/state.js';
import { MAX_SETUP_CHUNKS } from '../../src/lua/runtime.js';
import { loadLuaModule } from '../../src/lua/wasm.js';
import { newState, run } from './helpers.js';

const SNIPPET = `
greeting = function(name)
  if type(name) ~= "string" then error("name must be a string", 2) end
  return "hello " .. name
end
local function inner() error("from the snippet") end
fail_here = function() inner() end`;

async function snippetState(): Promise<LuaState> {
  const state = await newState();
  state.exec(SNIPPET, '=[test snippet]');
  return state;
}

describe('setup chunks from bytecode', () => {
  it('a state made after the first behaves the same, error positions included', async () => {
    const outcomes: unknown[][] = [];
    for (let i = 0; i < 3; i++) {
      const state = await snippetState();
      try {
        const [hello] = await run(state, 'return greeting("moon")');
        const errors: string[] = [];
        for (const code of ['fail_here()', 'greeting(42)']) {
          await run(state, code).catch((err: Error) => errors.push(err.message));
        }
        // The prelude's own functions still work (coroutines that wait on the host).
        const [waited] = await run(
          state,
          'local co = coroutine.wrap(function() task.sleep(1); return "woke" end) return co()',
        );
        outcomes.push([hello, waited, ...errors]);
      } finally {
        state.close();
      }
    }
    assert.deepEqual(outcomes[0], [
      'hello moon',
      'woke',
      '[test snippet]:6: from the snippet',
      'test:1: name must be a string',
    ]);
    assert.deepEqual(outcomes[1], outcomes[0]);
    assert.deepEqual(outcomes[2], outcomes[0]);
  });

  it('user code stays text only', async () => {
    const state = await snippetState();
    try {
      const [msg] = await run(state, 'local ok, err = load("\\27Lua\\84\\0", "x", "b") return err');
      assert.match(msg as string, /attempt to load a binary chunk \(mode is 't'\)/);
      assert.throws(() => state.load('\x1bLuaT\0', '=user'), /binary chunk/);
    } finally {
      state.close();
    }
  });

  it('varying exec sources past the bound still run (compiled as text)', async () => {
    const state = await newState();
    try {
      for (let i = 0; i < MAX_SETUP_CHUNKS + 10; i++) state.exec(`n_${i} = ${i}`, `=[n ${i}]`);
      const [sum] = await run(state, `return n_0 + n_${MAX_SETUP_CHUNKS + 9}`);
      assert.equal(sum, MAX_SETUP_CHUNKS + 9);
    } finally {
      state.close();
    }
  });
});

describe('the wasm module', () => {
  it("calls the instance's exports directly, not emscripten's asserting wrappers", async () => {
    const mod = await loadLuaModule();
    for (const fn of [mod._lua_gettop, mod._lua_pcallk, mod._realloc, mod._luaL_loadbufferx])
      assert.match(String(fn), /native code/);
    // The rest of emscripten's runtime is untouched.
    assert.equal(typeof mod.addFunction, 'function');
  });
});
