/**
 * hub_status is visible to every agent that sees the built-in (all of them when no `builtins`
 * list is set), so it shows no secrets: upstream addresses without credentials, query strings or
 * fragments, a stdio command as its program name only, plugin files and load errors without the
 * host's folders. A real hub; an unreachable upstream and a broken plugin give it something to say.
 */
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Client } from '@modelcontextprotocol/client';
import { connectHttpClient } from '../helpers/mcp-client.js';
import { startMoonhub, type MoonhubProcess } from '../helpers/moonhub-process.js';
import { makeHubDir, type HubDir } from '../helpers/auth-hub.js';
import { redactUrl, StatusRedactor } from '../../src/upstream/status-redact.js';

const SECRET_HTTP = 'http://user:hunter2@127.0.0.1:1/mcp?api_key=SEKRIT#frag';

describe('hub_status shows no secrets', () => {
  let dir: HubDir;
  let hub: MoonhubProcess;
  let client: Client;

  before(async () => {
    dir = makeHubDir({
      up: `
mcp.proxy(${JSON.stringify(SECRET_HTTP)}, { prefix = "a.", timeout_ms = 500 })
mcp.proxy("stdio:${process.execPath} /opt/secret-place/server.js --token=SEKRIT2", { prefix = "b." })
mcp.tool("up.ok", {}, function() return "ok" end)
`,
      broken: 'mcp.tool("broken.x", {}, function() end\n',
    });
    mkdirSync(join(dir.plugins, 'folder'));
    writeFileSync(join(dir.plugins, 'folder', 'init.lua'), 'error("no good")\n');
    hub = await startMoonhub(['--plugins', dir.plugins, '--no-watch']);
    ({ client } = await connectHttpClient(hub.url, 'legacy'));
  });
  after(async () => {
    await client.close();
    await hub.stop();
  });

  it('answers with addresses, paths and errors an agent may see', async () => {
    await hub.waitForLog(/"plugin":"broken"/);
    const r = await client.callTool({ name: 'hub_status', arguments: {} });
    const text = JSON.stringify(r);
    for (const secret of ['hunter2', 'SEKRIT', 'api_key', 'secret-place', dir.root, 'user:'])
      assert.ok(!text.includes(secret), `hub_status shows ${secret}: ${text}`);
    const s = r.structuredContent as {
      upstreams: { url: string }[];
      plugins: { name: string; entry: string; error?: { file?: string; message: string } }[];
    };
    assert.deepEqual(s.upstreams.map((u) => u.url).sort(), [
      'http://127.0.0.1:1/mcp',
      `stdio:${process.execPath.split('/').pop()}`,
    ]);
    const byName = Object.fromEntries(s.plugins.map((p) => [p.name, p]));
    assert.equal(byName.up!.entry, 'up.lua');
    assert.equal(byName.folder!.entry, join('folder', 'init.lua'));
    assert.equal(byName.broken!.error!.file, 'broken.lua');
    assert.match(byName.broken!.error!.message, /^broken\.lua:2:/);
    assert.match(byName.folder!.error!.message, /no good/);
    // The operator's log keeps the full detail.
    assert.ok(hub.log().includes(dir.plugins));
  });
});

describe('status redaction', () => {
  it('keeps a plain address, strips credentials, query and fragment', () => {
    assert.equal(redactUrl('https://mcp.example/v1/mcp'), 'https://mcp.example/v1/mcp');
    assert.equal(redactUrl('https://a:b@mcp.example:8443/x?k=v#f'), 'https://mcp.example:8443/x');
    assert.equal(redactUrl('stdio:npx -y some-server --key=1'), 'stdio:npx');
    assert.equal(redactUrl('stdio:"/opt/my tools/srv" --key=1'), 'stdio:srv');
    assert.equal(redactUrl('not a url'), '(an address that is not a URL)');
  });

  it('rewrites addresses and folders inside messages', () => {
    const r = new StatusRedactor(['/srv/plugins']);
    assert.equal(
      r.text('HTTP 401 from https://u:p@h.example/mcp?t=1 loading /srv/plugins/x/init.lua'),
      'HTTP 401 from https://h.example/mcp loading x/init.lua',
    );
    assert.equal(r.file('/srv/plugins/x/init.lua'), 'x/init.lua');
    assert.equal(r.file('/elsewhere/y.lua'), 'y.lua');
  });
});
