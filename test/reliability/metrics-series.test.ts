/**
 * Metric series of tools that come and go. A call's series is labelled with its tool's name and
 * kept for the process's life; names come from the registry, but the registry changes (a plugin
 * registering tools at run time, an upstream's changing list, reloads), so a client driving such
 * churn made new series without end (300 tools made, called and removed: 300 series kept).
 * Past observe.metrics.max_tool_series new tools count under tool="other".
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startMoonhub, type MoonhubProcess } from '../helpers/moonhub-process.js';
import { makeHubDir } from '../helpers/auth-hub.js';
import { adminToken, baseOf, sample, scrape } from '../helpers/operations.js';
import { initialize, inSession } from './limits-helpers.js';

const PLUGIN = `
local schema = { type = "object", properties = { n = { type = "string" } } }
mcp.tool("reg.make", { description = "make", input_schema = schema }, function(p)
  mcp.tool("reg.t" .. p.n, { description = "t" }, function() return "x" end)
  return "made"
end)
mcp.tool("reg.drop", { description = "drop", input_schema = schema }, function(p)
  mcp.remove_tool("reg.t" .. p.n)
  return "dropped"
end)
`;

describe('metric series of tools made and removed at run time', () => {
  let hub: MoonhubProcess;
  let admin: string;

  before(async () => {
    const dir = makeHubDir({ reg: PLUGIN });
    const file = dir.write(
      'moonhub.yaml',
      'plugins: { dirs: [plugins] }\nobserve: { metrics: { max_tool_series: 20 } }\n',
    );
    hub = await startMoonhub(['--config', file, '--data', dir.data, '--no-watch']);
    admin = adminToken(dir.data, ['--config', file]);
  });
  after(async () => hub?.stop());

  it('keeps at most max_tool_series tool series; later tools count as "other"', async () => {
    const sid = (await initialize(hub.url)).sid!;
    let id = 1;
    const call = async (name: string, args: Record<string, unknown> = {}) => {
      const r = await inSession(hub.url, sid, undefined, {
        jsonrpc: '2.0',
        id: id++,
        method: 'tools/call',
        params: { name, arguments: args },
      });
      assert.equal(r.body?.error, undefined, r.text);
    };
    // Bounded: 100 tools, each made, called once and removed.
    for (let i = 0; i < 100; i++) {
      await call('reg.make', { n: String(i) });
      await call(`reg.t${i}`);
      await call('reg.drop', { n: String(i) });
    }
    const text = await scrape(baseOf(hub.url), admin);
    const series = text.split('\n').filter((l) => l.startsWith('moonhub_mcp_calls_total{'));
    const named = series.filter((l) => /tool="reg\.t\d+"/.test(l));
    assert.ok(named.length <= 18, `${named.length} series of made tools (reg.make, reg.drop: 2)`);
    const other = sample(text, 'moonhub_mcp_calls_total', { tool: 'other', plugin: 'reg' });
    assert.equal(other + named.length, 100, 'every call of a made tool is counted');
  });
});
