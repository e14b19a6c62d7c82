/**
 * A plugin call and its result cross the worker hop as one JSON string when JSON carries them
 * exactly, else as a structured clone (src/plugins/wire.ts). What JSON would change must still
 * arrive as it was: a byte string from Lua (a Uint8Array), NaN, -0, holes, deep nesting; and the
 * two kinds of message, mixed in one turn, keep their order.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  decode,
  encode,
  encodeInvoke,
  jsonExact,
  resultHead,
  resultText,
} from '../../src/plugins/wire.js';
import { startMoonhub, type MoonhubProcess } from '../helpers/moonhub-process.js';
import { callTool, pluginsDir } from './isolation-helpers.js';

const W = String.raw`
mcp.tool("w.bytes", {}, function() return "\255\254ok" end)
mcp.tool("w.echo", {}, function(p) return p.text end)
mcp.tool("w.mixed", {}, function(p)
  if p.n % 2 == 0 then return "\255" .. p.n end
  return "n" .. p.n
end)
`;

describe('the plugin hop wire format', () => {
  it('takes JSON only when it round-trips exactly', () => {
    const exact: unknown[] = [
      { type: 'invoke', id: 1, input: { text: 'hello', n: 1.5, list: [1, 'a', null, true] } },
      { nested: { deeper: { x: [] } }, empty: {} },
      Object.assign(Object.create(null) as object, { a: 1 }),
    ];
    for (const v of exact) {
      assert.equal(jsonExact(v), true, JSON.stringify(v));
      assert.deepEqual(decode(encode(v as object, true)), { ...(v as object) });
    }
    const deep: Record<string, unknown> = {};
    let at = deep;
    for (let i = 0; i < 100; i++) at = (at.next = {}) as Record<string, unknown>;
    const inexact: unknown[] = [
      { value: new Uint8Array([255, 254]) },
      { value: NaN },
      { value: Infinity },
      { value: -0 },
      { value: undefined },
      { list: [1, , 3] }, // eslint-disable-line no-sparse-arrays
      { when: new Date(0) },
      { map: new Map() },
      { fn: () => 1 },
      { big: 1n },
      deep,
    ];
    for (const v of inexact) assert.equal(jsonExact(v), false, String(Object.keys(v as object)));
    // Not exact: the message itself goes (structured clone).
    const msg = { value: NaN };
    assert.equal(encode(msg, false), msg);
  });

  it('writes a call as JSON.stringify would, and reads a result by its head alone', () => {
    const call = {
      type: 'invoke' as const,
      id: 7,
      kind: 'tool' as const,
      name: 'a "quoted" name',
      input: { text: 'hé\n"', n: [1, 2.5, null] },
      cx: 3,
      rid: 'r-1',
      uri: 'x://y',
    };
    assert.equal(encodeInvoke(call, true), JSON.stringify(call));
    assert.equal(encodeInvoke(call, false), call);
    const value = { content: [{ type: 'text', text: ',"value":{}' }] };
    for (const memory of [undefined, 0, 123456789]) {
      const text = resultText(123456, value, memory);
      const head = resultHead(text)!;
      const message = {
        type: 'result',
        id: 123456,
        ok: true,
        ...(memory === undefined ? {} : { memory }),
        value,
      };
      assert.deepEqual(JSON.parse(text), message);
      assert.deepEqual(head, { id: 123456, memory, value: JSON.stringify(value) });
    }
    // Anything else is parsed whole: an error result, another message, a cut or altered head.
    for (const other of [
      JSON.stringify({ type: 'result', id: 1, ok: false, error: 'e' }),
      JSON.stringify({ type: 'watch', id: 1 }),
      '{"type":"result","id":,"ok":true,"value":1}',
      '{"type":"result","id":1,"ok":true,"memory":x,"value":1}',
      '{"type":"result","id":1,"ok":true,"value":1',
      '{"type":"result","id":1234567890123456,"ok":true,"value":1}',
    ])
      assert.equal(resultHead(other), undefined, other);
  });

  describe('against a real hub', () => {
    let hub: MoonhubProcess;
    before(async () => {
      hub = await startMoonhub(['--plugins', pluginsDir({ 'w.lua': W }), '--no-watch']);
    });
    after(async () => hub.stop());

    it('passes a byte string result as bytes (the structured clone path)', async () => {
      const r = await callTool(hub.url, 'w.bytes');
      assert.equal(r.isError, false);
      assert.equal(r.text, '\uFFFD\uFFFDok');
    });

    it('keeps every answer with its call when both paths share a turn', async () => {
      const answers = await Promise.all(
        Array.from({ length: 200 }, (_, n) => callTool(hub.url, 'w.mixed', { n })),
      );
      answers.forEach((a, n) =>
        assert.equal(a.text, n % 2 === 0 ? `\uFFFD${n}` : `n${n}`, `call ${n}`),
      );
      const text = 'x'.repeat(100_000);
      assert.equal((await callTool(hub.url, 'w.echo', { text })).text, text);
    });
  });
});
