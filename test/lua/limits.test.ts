/** Per-call limits: wall-clock timeout, instruction budget, memory ceiling; the state survives each. */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { type LuaState } from '../../src/lua/state.js';
import { LuaLimitError } from '../../src/lua/errors.js';
import { MiB, collect, newState, run } from './helpers.js';

let state: LuaState;
let baseline = 0;
before(async () => {
  state = await newState({ memoryLimit: 8 * MiB });
  baseline = await collect(state);
});
after(() => state.close());

function isLimit(limit: LuaLimitError['limit'], message: RegExp) {
  return (err: unknown): boolean => {
    assert.ok(err instanceof LuaLimitError, `expected a LuaLimitError, got ${String(err)}`);
    assert.equal(err.limit, limit);
    assert.match(err.message, message);
    return true;
  };
}

/** The state answers a normal call, and a full collection brings memory back near the baseline. */
async function recovered(): Promise<void> {
  assert.deepEqual(
    await run(state, 'local s = 0 for i = 1, 100 do s = s + i end return s'),
    [5050],
  );
  const used = await collect(state);
  assert.ok(
    used < baseline + 256 * 1024,
    `memory after the failed call: ${used} bytes (baseline ${baseline})`,
  );
}

describe('timeout', () => {
  it('while true do end ends with a timeout naming the limit', async () => {
    const t0 = performance.now();
    await assert.rejects(
      run(state, 'while true do end', [], { timeoutMs: 200 }),
      isLimit('timeout', /timeout: the call ran longer than its 200 ms limit/),
    );
    const ms = performance.now() - t0;
    assert.ok(ms >= 150 && ms < 2000, `took ${ms} ms`);
    await recovered();
  });

  it('a loop that pcalls an endless loop cannot swallow the timeout', async () => {
    const t0 = performance.now();
    await assert.rejects(
      run(state, 'while true do pcall(function() while true do end end) end', [], {
        timeoutMs: 200,
      }),
      isLimit('timeout', /200 ms limit/),
    );
    assert.ok(performance.now() - t0 < 2000);
    await recovered();
  });

  it('an endless loop inside a user coroutine, resumed under pcall, is stopped too', async () => {
    const src = `
      local co = coroutine.wrap(function() while true do end end)
      while true do pcall(co) end`;
    await assert.rejects(
      run(state, src, [], { timeoutMs: 200 }),
      isLimit('timeout', /200 ms limit/),
    );
    await recovered();
  });

  it('a call that waits (task.sleep) past its timeout ends with a timeout, even under pcall', async () => {
    const t0 = performance.now();
    await assert.rejects(
      run(state, 'task.sleep(1500) return "woke"', [], { timeoutMs: 100 }),
      isLimit('timeout', /100 ms limit/),
    );
    assert.ok(performance.now() - t0 < 2000);
    await assert.rejects(
      run(state, 'local ok, e = pcall(task.sleep, 1500) return ok, e', [], { timeoutMs: 100 }),
      isLimit('timeout', /100 ms limit/),
    );
    await recovered();
  });
});

describe('instruction budget', () => {
  it('a counting loop ends with an instructions error naming the budget', async () => {
    await assert.rejects(
      run(state, 'local n = 0 while true do n = n + 1 end', [], { instructions: 1e6 }),
      isLimit(
        'instructions',
        /instruction budget exceeded: the call ran more than 1000000 Lua instructions/,
      ),
    );
    await recovered();
  });

  it('a loop well inside the budget finishes', async () => {
    const [n] = await run(state, 'local n = 0 for i = 1, 10000 do n = n + 1 end return n', [], {
      instructions: 1e6,
    });
    assert.equal(n, 10000);
  });

  it('the budget is per call, and pcall cannot swallow it', async () => {
    await assert.rejects(
      run(
        state,
        'while true do pcall(function() local n = 0 while true do n = n + 1 end end) end',
        [],
        {
          instructions: 2e5,
        },
      ),
      isLimit('instructions', /more than 200000 Lua instructions/),
    );
    // A second call gets a fresh budget.
    const [n] = await run(state, 'local n = 0 for i = 1, 30000 do n = n + 1 end return n', [], {
      instructions: 2e5,
    });
    assert.equal(n, 30000);
  });
});

describe('memory', () => {
  it('a table that grows without end ends with a memory error naming the limit', async () => {
    await assert.rejects(
      run(state, 'local t = {} local i = 0 while true do i = i + 1 t[i] = {i} end'),
      isLimit('memory', /memory limit exceeded: the Lua state may use at most 8 MiB/),
    );
    await recovered();
  });

  it('the growth wrapped in pcall still ends the call with a memory error', async () => {
    const src = `
      local ok, err = pcall(function()
        local t = {} local i = 0
        while true do i = i + 1 t[i] = ("x"):rep(100) .. i end
      end)
      return "survived", ok, err`;
    await assert.rejects(run(state, src), isLimit('memory', /at most 8 MiB/));
    await recovered();
  });

  it('a loop that keeps retrying the growth under pcall ends too', async () => {
    const src =
      'while true do pcall(function() local t = {} while true do t[#t + 1] = {} end end) end';
    await assert.rejects(
      run(state, src, [], { timeoutMs: 3000 }),
      isLimit('memory', /at most 8 MiB/),
    );
    await recovered();
  });

  it('memory below the ceiling is fine, and memoryUsed sees it', async () => {
    const before = state.memoryUsed;
    const [n] = await run(state, 'big = {} for i = 1, 20000 do big[i] = {i} end return #big');
    assert.equal(n, 20000);
    assert.ok(
      state.memoryUsed > before + 500 * 1024,
      `memoryUsed ${state.memoryUsed} vs ${before}`,
    );
    await run(state, 'big = nil');
    await recovered();
  });
});

describe('memory: values pushed by the host', () => {
  // Arguments and awaited results are pushed under a protected call: unprotected, a refused
  // allocation made Lua panic and wasm abort() ("RuntimeError: Aborted(native code called abort())").
  it('an argument larger than the memory ceiling rejects with a memory LuaLimitError', async () => {
    await assert.rejects(
      run(state, 'local s = ... return #s', ['a'.repeat(9 * MiB)]),
      isLimit('memory', /at most 8 MiB/),
    );
    await recovered();
  });

  it('an awaited result larger than the ceiling fails in Lua, which can catch it', async () => {
    state.defineLibrary('big', {
      get: { fn: () => Promise.resolve('b'.repeat(9 * MiB)), async: true },
    });
    const [ok, err] = await run(state, 'return pcall(big.get)');
    assert.equal(ok, false);
    assert.match(String(err), /could not pass the result to Lua: .*at most 8 MiB/);
    await run(state, 'big = nil');
    await recovered();
  });
});
