/**
 * execute's scripts compiled once per worker (runtime.ts `rememberScriptChunk`, chunks.ts
 * `loadScriptOnStack`): a script sent again loads from the bytecode of its own text. It must
 * behave exactly as from the text (error positions included), binary input must stay refused,
 * and what is kept must stay within its bound.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { LuaState } from '../../src/lua/state.js';
import { MiB, newState } from './helpers.js';

const SCRIPT = `local t = {}
for i = 1, 3 do t[i] = i * 2 end
local function fail(x) if x then error("boom at three") end end
local ok, err = pcall(fail, true)
return table.concat(t, ","), err`;

/** The runtime's own record of kept scripts (white box: the bound is the point of the test). */
function kept(state: LuaState): { scripts: Map<string, unknown>; scriptBytes: number } {
  return (state as unknown as { rt: { scripts: Map<string, unknown>; scriptBytes: number } }).rt;
}

async function runScript(state: LuaState, code: string, cacheBytes: number): Promise<unknown[]> {
  const ref = state.loadScript(code, '=execute', cacheBytes);
  try {
    return await state.call(ref, []);
  } finally {
    state.unref(ref);
  }
}

describe('execute scripts kept compiled', () => {
  it('a script loaded again behaves as from its text, error positions included', async () => {
    const outcomes: unknown[][] = [];
    for (const cacheBytes of [0, MiB, MiB, MiB]) {
      const state = await newState();
      try {
        outcomes.push(await runScript(state, SCRIPT, cacheBytes));
        let syntax = '';
        try {
          state.loadScript('local x = = 1', '=execute', cacheBytes);
        } catch (err) {
          syntax = (err as Error).message;
        }
        outcomes.at(-1)!.push(syntax);
      } finally {
        state.close();
      }
    }
    assert.deepEqual(outcomes[0], [
      '2,4,6',
      'execute:3: boom at three',
      "execute:1: unexpected symbol near '='",
    ]);
    for (const o of outcomes.slice(1)) assert.deepEqual(o, outcomes[0]);
  });

  it('binary input stays refused, the first time and every time after', async () => {
    const state = await newState();
    try {
      for (let i = 0; i < 3; i++)
        assert.throws(() => state.loadScript('\x1bLuaT\0', '=execute', MiB), /binary chunk/);
      assert.equal(kept(state).scripts.has('=execute\n\x1bLuaT\0'), false);
    } finally {
      state.close();
    }
  });

  it('keeps at most its bound, the least recently used going first; 0 keeps none', async () => {
    const bound = 4096;
    const state = await newState();
    try {
      const first = 'return "first"';
      await runScript(state, first, bound);
      // One runtime per wasm module (the process here, a worker in the hub): states share it.
      assert.equal(kept(state).scripts.has(`=execute\n${first}`), true);
      for (let i = 0; i < 200; i++) {
        const [value] = await runScript(state, `local n = ${i} return n + 1`, bound);
        assert.equal(value, i + 1);
        assert.ok(kept(state).scriptBytes <= bound, `${kept(state).scriptBytes} > ${bound}`);
      }
      assert.ok(kept(state).scripts.size > 1);
      assert.equal(kept(state).scripts.has(`=execute\n${first}`), false);
      // Bigger than the whole bound: compiled from its text, not kept.
      const big = `return ${'1 + '.repeat(2000)}1`;
      assert.deepEqual(await runScript(state, big, bound), [2001]);
      assert.equal(kept(state).scripts.has(`=execute\n${big}`), false);
      const other = await newState();
      try {
        await runScript(other, 'return 7', 0);
        assert.equal(kept(other).scripts.has('=execute\nreturn 7'), false);
      } finally {
        other.close();
      }
    } finally {
      state.close();
    }
  });
});
