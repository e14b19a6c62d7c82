/**
 * No leaks through the side doors, on a real hub in token mode: a tool outside the caller's view
 * answers exactly like an unknown one on every path, the 2026-07-28 parameter-header check
 * included (a hidden tool with an `x-mcp-header` parameter and a wrong or missing header is still
 * "unknown tool", not -32020); `hub_status` shows a scoped principal only the plugins, upstreams
 * and counts inside its view.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startMoonhub, type MoonhubProcess } from '../helpers/moonhub-process.js';
import {
  connectWithToken,
  createSession,
  makeHubDir,
  rawPost,
  type HubDir,
  type Issued,
} from '../helpers/auth-hub.js';

/** A tool whose `region` parameter also travels in the `Mcp-Param-Region` header. */
const geoPlugin = (name: string) => `
mcp.tool("${name}.geo", {
  input_schema = {
    type = "object",
    properties = { region = { type = "string", ["x-mcp-header"] = "Region" } },
  },
}, function(params) return { plugin = "${name}", region = params.region } end)
`;

const CONFIG = `
hub_id: doors
auth: { mode: token }
plugins: { dirs: [plugins] }
agents:
  A: { plugins: [beta], builtins: [hub_status] }
  C: {}
`;

describe('side doors', () => {
  let dir: HubDir;
  let hub: MoonhubProcess;
  let a: Issued;
  let c: Issued;

  before(async () => {
    dir = makeHubDir({
      alpha: geoPlugin('alpha') + 'mcp.proxy("http://127.0.0.1:1/mcp", { prefix = "up." })\n',
      beta: geoPlugin('beta'),
    });
    const config = dir.write('moonhub.yaml', CONFIG);
    hub = await startMoonhub(['--config', config, '--data', dir.data, '--no-watch']);
    const common = ['--config', config, '--data', dir.data, '--url', hub.url];
    a = createSession([...common, '--agent', 'A']);
    c = createSession([...common, '--agent', 'C']);
  });
  after(async () => hub.stop());

  const call = (token: string, name: string, headers: Record<string, string>) =>
    rawPost(
      hub.url,
      { method: 'tools/call', params: { name, arguments: { region: 'eu' } } },
      { Authorization: `Bearer ${token}`, ...headers },
    );

  it('answers a hidden tool like an unknown one, whatever its parameter headers say', async () => {
    const cases: Record<string, string>[] = [
      {},
      { 'Mcp-Param-Region': 'us' },
      { 'Mcp-Param-Region': '=?base64?x?=' },
    ];
    for (const headers of cases) {
      const hidden = await call(a.token, 'alpha.geo', headers);
      const missing = await call(a.token, 'nope.geo', headers);
      assert.equal(hidden.status, 200, JSON.stringify(headers));
      assert.equal(hidden.status, missing.status);
      assert.equal(hidden.text, missing.text.replace('nope.geo', 'alpha.geo'));
      assert.match(hidden.text, /"code":-32602,"message":"Unknown tool: alpha.geo"/);
    }
  });

  it('still checks the parameter headers of a tool the caller sees', async () => {
    const wrong = await call(a.token, 'beta.geo', { 'Mcp-Param-Region': 'us' });
    assert.equal(wrong.status, 400);
    assert.match(wrong.text, /"code":-32020/);
    const right = await call(a.token, 'beta.geo', { 'Mcp-Param-Region': 'eu' });
    assert.equal(right.status, 200);
    assert.match(right.text, /"region":"eu"/);
    // The same hidden tool is visible, and checked, for a principal whose view holds it.
    const other = await call(c.token, 'alpha.geo', { 'Mcp-Param-Region': 'us' });
    assert.equal(other.status, 400);
    assert.match(other.text, /"code":-32020/);
  });

  it('shows a scoped principal only its own part of hub_status', async () => {
    const statusOf = async (token: string) => {
      const { client } = await connectWithToken(hub.url, 'modern', token);
      try {
        const r = await client.callTool({ name: 'hub_status', arguments: {} });
        return r.structuredContent as {
          plugins: { name: string }[];
          upstreams: { owner: string; url: string }[];
          counts: { tools: number; prompts: number; resources: number };
        };
      } finally {
        await client.close();
      }
    };
    const scoped = await statusOf(a.token);
    assert.deepEqual(
      scoped.plugins.map((p) => p.name),
      ['beta'],
    );
    assert.deepEqual(scoped.upstreams, []);
    // beta.geo and hub_status itself.
    assert.equal(scoped.counts.tools, 2);
    assert.ok(!JSON.stringify(scoped).includes('alpha'), JSON.stringify(scoped));
    const whole = await statusOf(c.token);
    assert.deepEqual(whole.plugins.map((p) => p.name).sort(), ['alpha', 'beta']);
    assert.deepEqual(
      whole.upstreams.map((u) => u.owner),
      ['alpha'],
    );
    assert.ok(whole.counts.tools > scoped.counts.tools);
  });
});
