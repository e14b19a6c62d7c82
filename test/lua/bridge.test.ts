/** The JS <-> Lua value bridge, both ways: call arguments in, returned values out. */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { type LuaState } from '../../src/lua/state.js';
import { BridgeError, MAX_DEPTH } from '../../src/lua/bridge.js';
import { LuaError } from '../../src/lua/errors.js';
import { MiB, newState, run } from './helpers.js';

let state: LuaState;
before(async () => {
  state = await newState();
});
after(() => state.close());

/** Lua code that describes its first argument: facts only Lua can tell. */
const INSPECT = `
  local t = ...
  return {
    len = #t,
    is_array = json.is_array(t),
    has_mt = getmetatable(t) ~= nil,
    n_keys = (function() local n = 0 for _ in pairs(t) do n = n + 1 end return n end)(),
  }
`;

describe('objects and arrays', () => {
  it('a JS array arrives as a marked sequence; an object as a plain table', async () => {
    const [arr] = await run(state, INSPECT, [[10, 20, 30]]);
    assert.deepEqual(arr, { len: 3, is_array: true, has_mt: true, n_keys: 3 });
    const [obj] = await run(state, INSPECT, [{ a: 1, b: 2 }]);
    assert.deepEqual(obj, { len: 0, is_array: false, has_mt: false, n_keys: 2 });
    const [fields] = await run(state, 'local o = ... return o.a, o.b, o["missing"] == nil', [
      { a: 'x', b: true },
    ]);
    assert.equal(fields, 'x');
  });

  it('an empty array stays an array and an empty object stays an object through a round trip', async () => {
    const [arr] = await run(state, INSPECT, [[]]);
    assert.deepEqual(arr, { len: 0, is_array: true, has_mt: true, n_keys: 0 });
    const [obj] = await run(state, INSPECT, [{}]);
    assert.deepEqual(obj, { len: 0, is_array: false, has_mt: false, n_keys: 0 });
    const out = await run(state, 'return ...', [[], {}, { list: [], map: {}, nested: [[], {}] }]);
    assert.deepEqual(out, [[], {}, { list: [], map: {}, nested: [[], {}] }]);
    assert.ok(Array.isArray(out[0]));
    assert.ok(!Array.isArray(out[1]));
  });

  it('a Lua {} comes out as {}, json.array({}) and json.array() as []', async () => {
    const out = await run(state, 'return {}, json.array({}), json.array(), {json.array()}');
    assert.deepEqual(out, [{}, [], [], [[]]]);
    assert.ok(!Array.isArray(out[0]));
  });

  it('elements added to a json.array keep it an array', async () => {
    const [t] = await run(state, 'local t = json.array() t[1] = "a" t[2] = "b" return t');
    assert.deepEqual(t, ['a', 'b']);
  });

  it('nil holes read as null while the table is at least half full; sparse tables become objects', async () => {
    const out = await run(
      state,
      'return {1, nil, 3}, {[1]=1, [2]=2, [4]=4}, {[1]=1, [10]=2}, {[0]="z"}, {[-1]=1}',
    );
    assert.deepEqual(out, [
      [1, null, 3],
      [1, 2, null, 4],
      { 1: 1, 10: 2 },
      { 0: 'z' },
      { '-1': 1 },
    ]);
  });

  it('mixed keys make an object with the integer keys written as strings', async () => {
    const [t] = await run(state, 'return {1, 2, x = 3, [1.5] = "f", [true] = "b"}');
    assert.deepEqual(t, { 1: 1, 2: 2, x: 3, '1.5': 'f', true: 'b' });
  });
});

describe('numbers', () => {
  it('JS integers arrive as Lua integers, other numbers as floats', async () => {
    const types = await run(
      state,
      'local a, b, c, d = ... return math.type(a), math.type(b), math.type(c), math.type(d)',
      [7, 7.5, -0.5, 2 ** 53],
    );
    assert.deepEqual(types, ['integer', 'float', 'float', 'integer']);
  });

  it('Lua integers and floats come out as JS numbers', async () => {
    const [three, big, f, inf, nan] = await run(state, 'return 3, 2^53, 7.0, 1/0, 0/0');
    assert.equal(three, 3);
    assert.equal(big, 2 ** 53);
    assert.equal(f, 7);
    assert.equal(inf, Infinity);
    assert.ok(Number.isNaN(nan));
    const [t53] = await run(state, 'return math.type(2^53)');
    assert.equal(t53, 'float');
  });

  it('math.maxinteger is exact in Lua but rounds to 2^63 as a JS number (observed)', async () => {
    const [max, min, exact] = await run(
      state,
      'return math.maxinteger, math.mininteger, math.maxinteger == 9223372036854775807',
    );
    assert.equal(exact, true);
    // Number(9223372036854775807n) rounds up to 2^63: precision is lost on the way out.
    assert.equal(max, 2 ** 63);
    assert.equal(min, -(2 ** 63));
    // 2^63 going back in is out of lua_Integer range, so it arrives as a float, not maxinteger.
    const [type, isMax] = await run(
      state,
      'local x = ... return math.type(x), x == math.maxinteger',
      [max],
    );
    assert.deepEqual([type, isMax], ['float', false]);
    // A bigint goes in as an exact integer.
    const [bt, bmax] = await run(state, 'local x = ... return math.type(x), x == math.maxinteger', [
      2n ** 63n - 1n,
    ]);
    assert.deepEqual([bt, bmax], ['integer', true]);
  });
});

describe('null', () => {
  it('JS null arrives as json.null, in objects and arrays alike, and comes back as null', async () => {
    const [facts] = await run(
      state,
      `local top, obj, arr = ...
       return { top = top == json.null, obj = obj.a == json.null, arr2 = arr[2] == json.null,
                arr3 = arr[3] == json.null, len = #arr }`,
      [null, { a: null }, [1, null, null]],
    );
    assert.deepEqual(facts, { top: true, obj: true, arr2: true, arr3: true, len: 3 });
    const out = await run(state, 'return ...', [null, { a: null }, [1, null, null], [null]]);
    assert.deepEqual(out, [null, { a: null }, [1, null, null], [null]]);
  });

  it('json.null comes out as null; a nil result as undefined', async () => {
    const out = await run(state, 'return json.null, nil, {a = json.null, b = nil}');
    assert.deepEqual(out, [null, undefined, { a: null }]);
  });

  it('undefined members of a JS object are left out', async () => {
    const [n] = await run(
      state,
      'local o = ... local n = 0 for _ in pairs(o) do n = n + 1 end return n',
      [{ a: 1, b: undefined }],
    );
    assert.equal(n, 1);
  });
});

describe('strings', () => {
  it('a non-UTF-8 Lua string comes out as a Uint8Array of its bytes', async () => {
    const [bytes, text] = await run(state, 'return "\\xff\\xfe", "ok"');
    assert.ok(bytes instanceof Uint8Array);
    assert.deepEqual([...bytes], [0xff, 0xfe]);
    assert.equal(text, 'ok');
  });

  it('a Uint8Array goes in as exactly those bytes', async () => {
    const input = new Uint8Array([0xff, 0x00, 0xfe, 0x41]);
    const [len, b1, b2, b3, b4] = await run(state, 'local s = ... return #s, s:byte(1, -1)', [
      input,
    ]);
    assert.deepEqual([len, b1, b2, b3, b4], [4, 0xff, 0x00, 0xfe, 0x41]);
    const [back] = await run(state, 'return ...', [input]);
    assert.ok(back instanceof Uint8Array);
    assert.deepEqual([...back], [...input]);
  });

  it('UTF-8 multibyte text goes both ways, byte length and code points as Lua sees them', async () => {
    const text = 'héllo ☃ 𝄞 日本';
    const [bytes, chars, back] = await run(state, 'local s = ... return #s, utf8.len(s), s', [
      text,
    ]);
    assert.equal(bytes, Buffer.byteLength(text, 'utf8'));
    assert.equal(chars, [...text].length);
    assert.equal(back, text);
    const [made] = await run(state, 'return utf8.char(233, 9731, 119070)');
    assert.equal(made, 'é☃𝄞');
  });

  it('1 MiB strings go both ways intact', async () => {
    const ascii = 'abcdefgh'.repeat(MiB / 8);
    const [len, head, tail, back] = await run(
      state,
      'local s = ... return #s, s:sub(1, 8), s:sub(-8), s',
      [ascii],
    );
    assert.deepEqual([len, head, tail], [MiB, 'abcdefgh', 'abcdefgh']);
    assert.equal(back, ascii);
    const [made] = await run(state, 'return ("é"):rep(...)', [MiB / 2]);
    assert.equal(typeof made, 'string');
    assert.equal((made as string).length, MiB / 2);
    assert.equal(Buffer.byteLength(made as string, 'utf8'), MiB);
  });
});

describe('limits of conversion', () => {
  it('a returned table nested deeper than the limit raises a BridgeError naming the path', async () => {
    const src = 'local t = {} local c = t for i = 1, ... do c.x = {} c = c.x end return t';
    const [ok] = await run(state, src, [MAX_DEPTH - 2]);
    assert.equal(typeof ok, 'object');
    await assert.rejects(run(state, src, [MAX_DEPTH + 10]), (err: Error) => {
      assert.ok(err instanceof BridgeError);
      assert.match(err.message, new RegExp(`nested more than ${MAX_DEPTH} levels deep at 'x\\.x`));
      return true;
    });
    assert.deepEqual(await run(state, 'return 1 + 1'), [2]);
  });

  it('a JS argument nested deeper than the limit is refused before Lua runs', async () => {
    const deep: Record<string, unknown> = {};
    let c = deep;
    for (let i = 0; i < MAX_DEPTH + 5; i++) c = c.x = {};
    await assert.rejects(run(state, 'ran = true', [deep]), /nested more than 100 levels deep/);
    assert.deepEqual(await run(state, 'return ran'), [undefined]);
    // A JS cycle has no detection of its own: it is caught by the depth limit (observed).
    const cyc: Record<string, unknown> = { a: 1 };
    cyc.self = cyc;
    await assert.rejects(run(state, 'return 1', [cyc]), /nested more than 100 levels deep/);
  });

  it('a returned table that contains itself raises a cycle error naming where', async () => {
    await assert.rejects(run(state, 'local t = {a = {}} t.a.back = t return t'), (err: Error) => {
      assert.ok(err instanceof BridgeError);
      assert.match(err.message, /table contains a cycle at 'a\.back'/);
      return true;
    });
    // The same table reached twice without a cycle is fine.
    const [shared] = await run(state, 'local s = {1} return {a = s, b = s}');
    assert.deepEqual(shared, { a: [1], b: [1] });
    assert.deepEqual(await run(state, 'return "still fine"'), ['still fine']);
  });

  it('functions in results read as undefined: skipped in objects, null in arrays', async () => {
    const out = await run(
      state,
      'return print, {f = print, a = 1}, {print, 2}, coroutine.create(print)',
    );
    assert.deepEqual(out, [undefined, { a: 1 }, [null, 2], undefined]);
    assert.equal(out.length, 4);
  });

  it('JS functions and symbols cannot be passed in', async () => {
    await assert.rejects(run(state, 'return 1', [() => 1]), /cannot pass a JS function to Lua/);
    await assert.rejects(run(state, 'return 1', [Symbol('s')]), /cannot pass a JS symbol to Lua/);
  });
});

describe('json.encode / json.decode', () => {
  it('round-trips objects, arrays, empties, null and numbers', async () => {
    const doc = {
      id: 7,
      ratio: 2.5,
      tags: [],
      meta: {},
      list: [1, null, 'x'],
      nested: { deep: [[{}]] },
      no: null,
    };
    const [text, again] = await run(
      state,
      'local s = ... local v = json.decode(s) return json.encode(v), v',
      [JSON.stringify(doc)],
    );
    assert.deepEqual(JSON.parse(text as string), doc);
    assert.deepEqual(again, doc);
  });

  it('decoded values have the documented Lua shapes', async () => {
    const [facts] = await run(
      state,
      `local v = json.decode('{"a": [1, 2.5, null], "e": [], "o": {}, "w": 7.0}')
       return { int = math.type(v.a[1]), float = math.type(v.a[2]), null3 = v.a[3] == json.null,
                len = #v.a, e_arr = json.is_array(v.e), o_arr = json.is_array(v.o),
                w = math.type(v.w), top_null = json.decode("null") == json.null }`,
    );
    assert.deepEqual(facts, {
      int: 'integer',
      float: 'float',
      null3: true,
      len: 3,
      e_arr: true,
      o_arr: false,
      w: 'integer',
      top_null: true,
    });
  });

  it('encodes nil, json.null, NaN and numbers as documented', async () => {
    const out = await run(
      state,
      'return json.encode(nil), json.encode(json.null), json.encode(0/0), json.encode(7), json.encode(7.5), json.encode({})',
    );
    assert.deepEqual(out, ['null', 'null', 'null', '7', '7.5', '{}']);
  });

  it('bad JSON raises an error starting json.decode: that names the position, catchable by pcall', async () => {
    await assert.rejects(run(state, 'return json.decode("[1, 2")'), (err: Error) => {
      assert.ok(err instanceof LuaError);
      assert.match(err.message, /^test:1: json\.decode: .*position \d+/);
      return true;
    });
    const [ok, msg] = await run(state, 'return pcall(json.decode, "{bad")');
    assert.equal(ok, false);
    assert.match(msg as string, /json\.decode: .*position 1/);
  });

  it('a non-string argument to decode names its Lua type', async () => {
    const [, m1] = await run(state, 'return pcall(json.decode)');
    const [, m2] = await run(state, 'return pcall(json.decode, {})');
    const [, m3] = await run(state, 'return pcall(json.decode, "\\xff")');
    assert.match(m1 as string, /json\.decode: .*string expected, got no value/);
    assert.match(m2 as string, /json\.decode: .*string expected, got table/);
    assert.match(m3 as string, /got non-UTF-8 bytes/);
  });

  it('encode errors start with json.encode: (functions, cycles, deep nesting)', async () => {
    const [, fn] = await run(state, 'return pcall(json.encode, {f = print})');
    const [, cyc] = await run(state, 'local t = {} t.me = t return pcall(json.encode, t)');
    const [, deep] = await run(
      state,
      'local t = {} local c = t for i = 1, 150 do c[1] = {} c = c[1] end return pcall(json.encode, t)',
    );
    assert.match(fn as string, /^json\.encode: cannot convert a function at 'f' to JSON/);
    assert.match(cyc as string, /^json\.encode: table contains a cycle at 'me'/);
    assert.match(deep as string, /^json\.encode: table nested more than 100 levels deep/);
  });

  it('non-UTF-8 bytes are encoded with U+FFFD', async () => {
    const [text] = await run(state, 'return json.encode("a\\xffb")');
    assert.equal(JSON.parse(text as string), 'a\uFFFDb');
  });
});
