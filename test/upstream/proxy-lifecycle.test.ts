/**
 * A proxy's life follows its plugin: a failed reload keeps the old proxy (same child, same tools),
 * a reload that no longer proxies kills the child, and a deleted plugin takes its proxies along.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/client';
import { connectHttpClient } from '../helpers/mcp-client.js';
import { startMoonhub, type MoonhubProcess } from '../helpers/moonhub-process.js';
import { EVERYTHING_STDIO } from '../helpers/everything.js';

interface Up {
  url: string;
  owner: string;
  pid?: number;
  state: string;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function until(cond: () => Promise<boolean> | boolean, what: string): Promise<void> {
  const deadline = Date.now() + 15_000;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('proxy lifecycle with its plugin', () => {
  let hub: MoonhubProcess;
  let client: Client;
  const dir = mkdtempSync(join(tmpdir(), 'moonhub-life-'));
  const file = join(dir, 'life.lua');
  const proxied = `assert(mcp.proxy(${JSON.stringify(EVERYTHING_STDIO)}, { prefix = "life.", include = { "echo" } }))\n`;

  const upstreams = async (): Promise<Up[]> => {
    const r = await client.callTool({ name: 'hub_status', arguments: {} });
    return (r as { structuredContent: { upstreams: Up[] } }).structuredContent.upstreams;
  };
  const tools = async () => (await client.listTools()).tools.map((t) => t.name);

  before(async () => {
    writeFileSync(file, proxied);
    hub = await startMoonhub(['--plugins', dir]);
    ({ client } = await connectHttpClient(hub.url, 'legacy'));
  });
  after(async () => {
    await client?.close();
    await hub?.stop();
  });

  it('keeps the proxy when a reload fails, drops it when the plugin stops proxying', async () => {
    const [first] = await upstreams();
    assert.equal(first?.owner, 'life');
    const pid = first!.pid!;
    assert.ok(alive(pid));

    let from = hub.log().length;
    writeFileSync(file, proxied + 'this is not lua\n');
    await hub.waitForLog(/plugin failed to reload/, from, 15_000);
    assert.equal((await upstreams())[0]?.pid, pid, 'same child after a failed reload');
    assert.ok((await tools()).includes('life.echo'));

    from = hub.log().length;
    writeFileSync(file, 'mcp.tool("plain", {}, function() return "no proxy" end)\n');
    await hub.waitForLog(/plugin reloaded/, from, 15_000);
    await until(async () => (await upstreams()).length === 0, 'the proxy to go');
    await until(() => !alive(pid), 'the child to be killed');
    assert.ok(!(await tools()).includes('life.echo'));
  });

  it('closes the proxies of a plugin that mcp.reset clears', async () => {
    const from = hub.log().length;
    writeFileSync(
      file,
      proxied + 'mcp.tool("wipe", {}, function() mcp.reset("life") return "wiped" end)\n',
    );
    await hub.waitForLog(/plugin reloaded/, from, 15_000);
    await until(async () => (await upstreams())[0]?.pid !== undefined, 'a child');
    const pid = (await upstreams())[0]!.pid!;
    const r = await client.callTool({ name: 'wipe', arguments: {} });
    assert.equal((r.content as { text: string }[])[0]?.text, 'wiped');
    await until(() => !alive(pid), 'the child to be killed');
    assert.equal((await upstreams()).length, 0);
    assert.ok(!(await tools()).includes('life.echo'));
  });

  it('closes the proxies of a deleted plugin', async () => {
    let from = hub.log().length;
    writeFileSync(file, proxied);
    await hub.waitForLog(/plugin reloaded/, from, 15_000);
    await until(async () => (await upstreams())[0]?.pid !== undefined, 'a new child');
    const pid = (await upstreams())[0]!.pid!;
    from = hub.log().length;
    rmSync(file);
    await hub.waitForLog(/plugin removed/, from, 15_000);
    await until(() => !alive(pid), 'the child to be killed');
    assert.equal((await upstreams()).length, 0);
    assert.ok(!(await tools()).includes('life.echo'));
  });
});
