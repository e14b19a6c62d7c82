/** The coroutine scheduler: calls that wait on JS promises interleave, at any depth. */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { LuaMulti, type LuaState } from '../../src/lua/state.js';
import { LuaError } from '../../src/lua/errors.js';
import { collect, newState, run } from './helpers.js';

let state: LuaState;
const events: string[] = [];
before(async () => {
  state = await newState();
  state.defineLibrary('host', {
    now: { fn: () => performance.now() },
    mark: {
      fn: (args) => {
        events.push(String(args[0]));
        return undefined;
      },
    },
    fail: {
      async: true,
      fn: (args) => Promise.reject(new Error(`backend down: ${String(args[0])}`)),
    },
    echo: { async: true, fn: async (args) => new LuaMulti(args) },
  });
});
after(() => state.close());

describe('interleaving', () => {
  it('two calls that each sleep 100 ms run side by side', async () => {
    events.length = 0;
    const ref = state.load(
      'local tag = ... local t0 = host.now() host.mark(tag .. " start") task.sleep(100) host.mark(tag .. " end") return tag, t0, host.now()',
      '=pair',
    );
    const t0 = performance.now();
    const [a, b] = await Promise.all([state.call(ref, ['A']), state.call(ref, ['B'])]);
    const elapsed = performance.now() - t0;
    state.unref(ref);
    assert.equal(a[0], 'A');
    assert.equal(b[0], 'B');
    // Both started before either finished: the waits overlapped.
    assert.deepEqual(events.slice(0, 2).sort(), ['A start', 'B start']);
    assert.deepEqual(events.slice(2).sort(), ['A end', 'B end']);
    // Calls run one after the other would not overlap at all. (How much they overlap depends on
    // how soon the second call starts, which a loaded machine delays: not asserted.)
    const [aStart, aEnd, bStart, bEnd] = [a[1], a[2], b[1], b[2]] as number[];
    const overlap = Math.min(aEnd, bEnd) - Math.max(aStart, bStart);
    assert.ok(overlap > 0, `the two sleeps did not overlap (${overlap} ms)`);
    assert.ok(elapsed >= 95 && elapsed < 1000, `two 100 ms sleeps took ${elapsed} ms`);
  });

  it('a short call finishes while a long one is still waiting', async () => {
    const order: string[] = [];
    const long = run(state, 'task.sleep(150) return "long"').then(([v]) => order.push(v as string));
    const short = run(state, 'task.sleep(10) return "short"').then(([v]) =>
      order.push(v as string),
    );
    const sync = run(state, 'return "sync"').then(([v]) => order.push(v as string));
    await Promise.all([long, short, sync]);
    assert.deepEqual(order, ['sync', 'short', 'long']);
  });

  it('an async host function can return several values', async () => {
    assert.deepEqual(await run(state, 'return host.echo(1, "two", json.null)'), [1, 'two', null]);
  });
});

describe('waits at depth', () => {
  it('works several Lua calls deep, inside pcall', async () => {
    const [ok, v, depth] = await run(
      state,
      `local function deep(n) if n == 0 then task.sleep(5) return "bottom", n end return deep(n - 1) end
       local function wrapper(n) local a, b = deep(n) return a, b end
       local ok, v, d = pcall(wrapper, 8)
       return ok, v, d`,
    );
    assert.deepEqual([ok, v, depth], [true, 'bottom', 0]);
  });

  it('works inside a user coroutine.wrap and a coroutine.resume loop', async () => {
    const [fromWrap, log, status] = await run(
      state,
      `local w = coroutine.wrap(function(x) task.sleep(5) local ok, v = pcall(function() task.sleep(5) return x * 2 end) return v end)
       local fromWrap = w(21)
       local co = coroutine.create(function(a)
         task.sleep(5)
         local b = coroutine.yield(a + 1)
         task.sleep(5)
         local c = coroutine.yield(b * 2)
         return "done:" .. c
       end)
       local log, input = {}, 1
       while true do
         local ok, v = coroutine.resume(co, input)
         assert(ok, v)
         log[#log + 1] = v
         if coroutine.status(co) == "dead" then break end
         input = v * 10
       end
       return fromWrap, log, coroutine.status(co)`,
    );
    assert.equal(fromWrap, 42);
    assert.deepEqual(log, [2, 40, 'done:400']);
    assert.equal(status, 'dead');
  });

  it('works in a coroutine nested in a coroutine', async () => {
    const [v] = await run(
      state,
      `local outer = coroutine.wrap(function()
         local inner = coroutine.wrap(function() task.sleep(5) coroutine.yield("in1") task.sleep(5) return "in2" end)
         local a = inner() coroutine.yield(a) local b = inner() return b
       end)
       return outer() .. "," .. outer()`,
    );
    assert.equal(v, 'in1,in2');
  });

  it('a generator yields its own values while it sleeps between them', async () => {
    const t0 = performance.now();
    const [got, count] = await run(
      state,
      `local gen = coroutine.wrap(function() for i = 1, 3 do task.sleep(20) coroutine.yield(i) end return nil end)
       local got = {}
       for v in gen do got[#got + 1] = v end
       return got, #got`,
    );
    assert.deepEqual(got, [1, 2, 3]);
    assert.equal(count, 3);
    assert.ok(performance.now() - t0 >= 55, 'the three sleeps really waited');
  });
});

describe('errors', () => {
  it('a rejected host promise raises a Lua error with its message, catchable by pcall', async () => {
    const [ok, msg] = await run(state, 'return pcall(host.fail, "db")');
    assert.equal(ok, false);
    assert.match(msg as string, /backend down: db/);
    await assert.rejects(run(state, 'local x = host.fail("x")\nreturn x'), (err: Error) => {
      assert.ok(err instanceof LuaError);
      assert.equal(err.message, 'test:1: backend down: x');
      return true;
    });
    // Inside a user coroutine the error reaches coroutine.resume as (false, message).
    const [cok, cmsg] = await run(
      state,
      'return coroutine.resume(coroutine.create(function() host.fail("co") end))',
    );
    assert.equal(cok, false);
    assert.match(cmsg as string, /backend down: co/);
    assert.deepEqual(await run(state, 'task.sleep(1) return "fine"'), ['fine']);
  });

  it('coroutine.yield at the top level of a call gives a clear error', async () => {
    await assert.rejects(run(state, 'coroutine.yield(1)'), (err: Error) => {
      assert.ok(err instanceof LuaError);
      assert.match(err.message, /attempt to yield from outside a coroutine/);
      return true;
    });
    await assert.rejects(
      run(state, 'coroutine.yield()'),
      /attempt to yield from outside a coroutine/,
    );
    assert.deepEqual(await run(state, 'return coroutine.isyieldable()'), [true]);
    assert.deepEqual(await run(state, 'return "ok"'), ['ok']);
  });

  it('an async function called outside a running call is refused', async () => {
    assert.throws(
      () => state.exec('task.sleep(1)', '=setup'),
      /can only be called inside a running call/,
    );
  });

  it('a closed state refuses new calls', async () => {
    const s = await newState();
    const ref = s.load('return 1', '=x');
    s.close();
    await assert.rejects(s.call(ref, []), /is closed/);
  });
});

describe('leaks', () => {
  it('200 sequential calls (some waiting) keep memoryUsed stable', async () => {
    const ref = state.load(
      'local i = ... local t = {i = i, s = ("x"):rep(100)} if i % 10 == 0 then task.sleep(0) end return t',
      '=loop',
    );
    for (let i = 0; i < 20; i++) await state.call(ref, [i]);
    const before = await collect(state);
    for (let i = 0; i < 200; i++) {
      const [t] = await state.call(ref, [i]);
      assert.equal((t as { i: number }).i, i);
    }
    const afterUse = await collect(state);
    state.unref(ref);
    assert.ok(
      afterUse - before < 16 * 1024,
      `memory grew by ${afterUse - before} bytes over 200 calls`,
    );
  });

  it('200 failing calls do not leak either', async () => {
    const ref = state.load('error({code = ...})', '=fail');
    const before = await collect(state);
    for (let i = 0; i < 200; i++) await assert.rejects(state.call(ref, [i]), /"code":\d+/);
    const afterUse = await collect(state);
    state.unref(ref);
    assert.ok(
      afterUse - before < 16 * 1024,
      `memory grew by ${afterUse - before} bytes over 200 failures`,
    );
  });
});

describe('the abort signal is read only when a call waits', () => {
  it('a call that never waits does not read limits.signal; one that waits does, and hears it', async () => {
    // The Lua bindings pass a getter: its first read makes the transport build an
    // AbortController, a cost every tools/call would pay if the signal were read eagerly.
    let reads = 0;
    const controller = new AbortController();
    const limits = {
      timeoutMs: 5000,
      get signal() {
        reads++;
        return controller.signal;
      },
    };
    assert.deepEqual(await run(state, 'return 1 + 1', [], limits), [2]);
    assert.equal(reads, 0, 'no wait, no read');
    const waiting = run(state, 'task.sleep(10000) return "late"', [], limits);
    setTimeout(() => controller.abort(), 20);
    await assert.rejects(waiting, /cancelled/);
    assert.ok(reads >= 1, 'read once the call waited');
  });
});
