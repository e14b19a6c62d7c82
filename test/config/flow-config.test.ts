/**
 * The flow bounds in the config file (`limits.streams`, `limits.notices`, `limits.rate`): read
 * into the server's settings with their defaults, and a bad value refused with the key named.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { resolveSettings } from '../../src/config/settings.js';
import { FlowLimits, DEFAULT_STREAM_BUFFER_BYTES } from '../../src/server/flow-limits.js';
import { RateLimiter } from '../../src/server/rate-limit.js';
import { LocalCounters } from '../../src/cluster/counters.js';

const dir = mkdtempSync(join(tmpdir(), 'moonhub-flow-config-'));
const file = (name: string, text: string) => {
  const p = join(dir, name);
  writeFileSync(p, text);
  return p;
};

describe('limits in the config file', () => {
  it('reads streams, notices and rate rules; burst defaults to one second', () => {
    const s = resolveSettings({
      config: file(
        'ok.yaml',
        `limits:
  streams: { buffer_bytes: 1048576 }
  notices: { per_second: 10 }
  rate:
    principal: { per_second: 2.5 }
    tools: { "a.*": { per_second: 1, burst: 3 } }
`,
      ),
    });
    assert.deepEqual(s.flow, {
      streamBufferBytes: 1048576,
      noticesPerSecond: 10,
      ratePrincipal: { perSecond: 2.5, burst: 3 },
      rateTools: [{ glob: 'a.*', rule: { perSecond: 1, burst: 3 } }],
    });
    const flow = new FlowLimits(s.flow);
    assert.equal(flow.streamBufferBytes, 1048576);
    assert.equal(flow.noticeBurst, 200);
    assert.ok(flow.rate !== undefined);
  });

  it('has no rate limiter unless one is configured', () => {
    const flow = new FlowLimits(resolveSettings({}).flow);
    assert.equal(flow.rate, undefined);
    assert.equal(flow.streamBufferBytes, DEFAULT_STREAM_BUFFER_BYTES);
  });

  it('refuses bad values naming the key', () => {
    const cases: [string, RegExp][] = [
      ['limits: { rate: { principal: { burst: 3 } } }', /limits\.rate\.principal\.per_second/],
      ['limits: { rate: { principal: { per_second: 0 } } }', /limits\.rate\.principal\.per_second/],
      ['limits: { streams: { buffer_bytes: 10 } }', /limits\.streams\.buffer_bytes/],
      ['limits: { notices: { message_bytes: "big" } }', /limits\.notices\.message_bytes/],
      ['limits: { rate: { everyone: { per_second: 1 } } }', /limits\.rate/],
    ];
    for (const [text, re] of cases)
      assert.throws(() => resolveSettings({ config: file('bad.yaml', text) }), re, text);
  });
});

describe('RateLimiter', () => {
  it('keeps principals apart and bounds the buckets a client can make', () => {
    const r = new RateLimiter({
      principal: { perSecond: 1, burst: 2 },
      tool: { perSecond: 1, burst: 1 },
      maxBuckets: 100,
    });
    assert.equal(r.take('a', undefined), undefined);
    assert.equal(r.take('a', undefined), undefined);
    const refused = r.take('a', undefined);
    assert.equal(refused?.limit, 'limits.rate.principal');
    assert.ok(refused!.retryAfterMs > 0 && refused!.retryAfterMs <= 1000);
    assert.equal(r.take('b', 'x'), undefined, 'another principal is not affected');
    assert.equal(r.take('c', 'x'), undefined);
    assert.equal(r.take('c', 'x')?.limit, 'limits.rate.tool');
    // 10,000 made-up principals and tool names: the maps stay bounded.
    for (let i = 0; i < 10_000; i++) r.take('p' + i, 't' + i);
    assert.ok(r.size.principals <= 100 && r.size.tools <= 100, JSON.stringify(r.size));
  });
});

describe('RateLimiter with limits.rate.global', () => {
  it('holds a principal to one rate across processes sharing the cluster buckets', async () => {
    // Two processes' limiters over one set of shared buckets (the in-memory carrier).
    const shared = new LocalCounters();
    const rule = { principal: { perSecond: 1, burst: 10 } };
    const first = new RateLimiter(rule);
    const second = new RateLimiter(rule);
    first.shareWith(shared);
    second.shareWith(shared);
    for (let i = 0; i < 10; i++) assert.equal(first.take('a', undefined), undefined);
    await new Promise((r) => setImmediate(r));
    // The second process's own bucket is full, but the principal's shared one is empty: the
    // first request there learns it, the next are refused without asking the store.
    assert.equal(second.take('a', undefined), undefined);
    await new Promise((r) => setImmediate(r));
    const refused = second.take('a', undefined);
    assert.equal(refused?.limit, 'limits.rate.principal');
    assert.ok(refused!.retryAfterMs > 0 && refused!.retryAfterMs <= 1000);
    assert.equal(second.take('b', undefined), undefined, 'another principal is not affected');
    await shared.close();
  });
});
