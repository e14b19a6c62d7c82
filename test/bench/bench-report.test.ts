/**
 * The bench's own arithmetic: reading wrk's report, medians and ratios, the CI regression rule,
 * the SVG chart, and attributing CPU-profile samples. (The measurements themselves live in
 * `npm run bench`, never in tests.)
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { areaOf, summarizeProfile } from '../../bench/lib/cpu-profile.js';
import { ratioChart, regressions, baselineOf } from '../../bench/lib/report.js';
import { newRow, summarize, type Row } from '../../bench/lib/rows.js';
import { parseWrk } from '../../bench/lib/wrk.js';

const WRK = `Running 5s test @ http://127.0.0.1:40000/mcp
  1 threads and 50 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     2.10ms    1.20ms  40.00ms   90.00%
    Req/Sec    16.20k     1.10k   18.00k    80.00%
  Latency Distribution
     50%  850.00us
     75%    2.20ms
     90%    3.10ms
     99%    1.20s
  81000 requests in 5.00s, 20.00MB read
  Socket errors: connect 0, read 2, write 0, timeout 3
  Non-2xx or 3xx responses: 7
Requests/sec:  16200.00
Transfer/sec:      4.00MB
`;

function row(id: string, rps: number[], cpu: number[], ref = 'bare'): Row {
  const r = newRow(id, id, { ref });
  r.samples = rps.map((x, i) => ({
    rps: x,
    p50Ms: 1,
    p99Ms: 2,
    requests: x,
    errors: 0,
    cpuUsPerRequest: cpu[i],
  }));
  r.rssBytes = rps.map(() => 100 * 1048576);
  return r;
}

describe('bench report helpers', () => {
  it('reads wrk: req/s, percentiles in any unit, and every kind of error', () => {
    const s = parseWrk(WRK);
    assert.equal(s.rps, 16200);
    assert.equal(s.p50Ms, 0.85);
    assert.equal(s.p99Ms, 1200);
    assert.equal(s.requests, 81000);
    assert.equal(s.errors, 12);
    assert.throws(() => parseWrk('unable to connect to 127.0.0.1:1'), /unexpected output/);
  });

  it('takes medians of the rounds and ratios to the reference row', () => {
    const [bare, hub] = summarize([
      row('bare', [100, 300, 200], [20, 10, 30]),
      row('hub-2026', [50, 150, 100], [40, 50, 60]),
    ]);
    assert.equal(bare!.rpsRatio, 1);
    assert.equal(hub!.rps, 100);
    assert.equal(hub!.rpsRatio, 0.5);
    // CPU ratio: the reference's CPU per request over this row's (higher is better).
    assert.equal(hub!.cpuRatio, 0.4);
  });

  it('flags a ratio more than 25 % under the baseline, and only that', () => {
    const rows = summarize([
      row('bare', [100], [20]),
      row('hub-2026', [70], [40]),
      row('hub-2025', [40], [30]),
    ]);
    rows.push({ ...rows[1]!, id: 'hub-proxy', na: 'n/a: mcp.proxy unavailable' });
    const baseline = {
      'hub-2026': { rps: 0.8, cpu: 0.5 }, // 0.70 vs 0.80: within 25 %
      'hub-2025': { rps: 0.6, cpu: 0.9 }, // 0.40 vs 0.60 and 0.667 vs 0.9: both below
      'hub-proxy': { rps: 0.9, cpu: 0.9 }, // not measured: skipped
    };
    const bad = regressions(rows, baseline);
    assert.deepEqual(
      bad.map((b) => `${b.id}:${b.ratio}`),
      ['hub-2025:rps', 'hub-2025:cpu'],
    );
    assert.deepEqual(Object.keys(baselineOf(rows)), ['hub-2026', 'hub-2025']);
  });

  it('records the list rows and the proxy hop between two hubs (against its own ref)', () => {
    const rows = summarize([
      row('bare', [100], [20]),
      row('hub-list-10k', [60], [40]),
      row('hub-proxied', [30], [60], 'hub-list-10k'),
    ]);
    const base = baselineOf(rows);
    assert.deepEqual(Object.keys(base), ['hub-list-10k', 'hub-proxied']);
    assert.equal(base['hub-proxied']!.rps, 0.5);
  });

  it('draws one bar per measured throughput row and escapes labels', () => {
    const rows = summarize([row('bare', [100], [20]), row('hub-2026', [60], [40])]);
    rows[1]!.label = 'moonhub <2026> & co';
    rows.push({ ...rows[1]!, id: 'hub-proxy', label: 'proxy', na: 'n/a: mcp.proxy unavailable' });
    const svg = ratioChart(rows, 'test');
    assert.match(svg, /^<svg [^>]*xmlns="http:\/\/www.w3.org\/2000\/svg"/);
    assert.match(svg, /moonhub &lt;2026&gt; &amp; co/);
    assert.match(svg, /60.0 %/);
    assert.match(svg, /n\/a: mcp.proxy unavailable/);
    assert.equal(svg.match(/<rect /g)!.length, 2); // background + one bar
  });

  it('attributes profile samples to areas over a time window', () => {
    assert.equal(
      areaOf('handleRequest', 'file:///x/dist/src/server/dispatcher.js'),
      'moonhub server (src/server)',
    );
    assert.equal(areaOf('writev', ''), 'socket writes (kernel, writev)');
    assert.equal(areaOf('(idle)', ''), 'idle');
    const profile = {
      nodes: [
        { id: 1, callFrame: { functionName: '(idle)', url: '', lineNumber: 0 } },
        {
          id: 2,
          callFrame: { functionName: 'f', url: 'file:///x/dist/src/lua/state.js', lineNumber: 9 },
        },
        { id: 3, callFrame: { functionName: '(garbage collector)', url: '', lineNumber: 0 } },
      ],
      // Sample i lasts until sample i+1 (timeDeltas in µs); the window keeps 1..3 ms.
      samples: [2, 2, 3, 1, 2],
      timeDeltas: [0, 1000, 1000, 1000, 1000],
    };
    const sum = summarizeProfile(JSON.stringify(profile), 1, 3);
    assert.equal(sum.activeMs, 2);
    assert.deepEqual(
      sum.areas.map((a) => [a.area, a.ms]),
      [
        ['moonhub Lua bridge (src/lua*)', 1],
        ['GC', 1],
      ],
    );
  });
});
