/**
 * The stdio output (src/server/line-output.ts): the lines of one event-loop turn leave in one
 * write, in order; what is queued counts against the stall bound before it is written; a
 * transport that closes writes what it had queued, and one whose peer stalled drops it.
 */
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { describe, it } from 'node:test';
import { LineOutput } from '../../src/server/line-output.js';

function counted(): { stream: PassThrough; writes: string[] } {
  const stream = new PassThrough();
  const writes: string[] = [];
  const write = stream.write.bind(stream);
  stream.write = ((chunk: string) => {
    writes.push(chunk);
    return write(chunk);
  }) as typeof stream.write;
  return { stream, writes };
}

const turn = () => new Promise((r) => setImmediate(r));

describe('LineOutput', () => {
  it('writes the lines of one turn together, in order, each ending with a newline', async () => {
    const { stream, writes } = counted();
    const out = new LineOutput(stream);
    for (let i = 0; i < 50; i++) out.line(`{"id":${i}}`);
    assert.equal(writes.length, 0, 'nothing is written before the turn ends');
    assert.equal(out.waiting, 50 * '{"id":0}\n'.length + 40, 'queued lines count as waiting');
    await turn();
    assert.equal(writes.length, 1);
    const lines = writes[0]!.split('\n');
    assert.equal(lines.pop(), '');
    assert.deepEqual(
      lines.map((l) => (JSON.parse(l) as { id: number }).id),
      Array.from({ length: 50 }, (_, i) => i),
    );
    out.line('next');
    await turn();
    assert.deepEqual(writes.slice(1), ['next\n'], 'a later turn is a write of its own');
  });

  it('flush() writes at once (a closing transport); drop() forgets (a stalled peer)', async () => {
    const { stream, writes } = counted();
    const out = new LineOutput(stream);
    out.line('a');
    out.flush();
    assert.deepEqual(writes, ['a\n']);
    out.line('b');
    out.drop();
    await turn();
    assert.deepEqual(writes, ['a\n'], 'dropped lines never go out');
    assert.equal(out.waiting, stream.writableLength);
  });

  it('does not write to a destroyed stream', async () => {
    const { stream, writes } = counted();
    const out = new LineOutput(stream);
    out.line('late');
    stream.destroy();
    await turn();
    assert.deepEqual(writes, []);
  });
});
