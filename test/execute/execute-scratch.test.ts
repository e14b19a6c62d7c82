/**
 * An `execute` run's scratch folder is made only when the script touches `/source/` (issue 17:
 * the folder per run was a quarter of the hub's CPU for a script without files), inside one
 * private folder of the hub, fresh for every run and removed when the run ends; the hub's stop
 * removes what is left. A real hub with TMPDIR pointed at a folder of the test's own.
 */
import assert from 'node:assert/strict';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Client } from '@modelcontextprotocol/client';
import { connectHttpClient } from '../helpers/mcp-client.js';
import { startMoonhub, type MoonhubProcess } from '../helpers/moonhub-process.js';
import { call, scratch, type Scratch } from '../reliability/helpers.js';

/** Every path under `dir`, relative, sorted. */
function tree(dir: string): string[] {
  const out: string[] = [];
  // The hub removes run folders while this walks them: what vanished meanwhile is not listed.
  const gone = (err: unknown) => (err as NodeJS.ErrnoException).code === 'ENOENT';
  const walk = (rel: string) => {
    let names: string[];
    try {
      names = readdirSync(join(dir, rel));
    } catch (err) {
      if (gone(err)) return;
      throw err;
    }
    for (const name of names) {
      const sub = rel === '' ? name : `${rel}/${name}`;
      let isDir: boolean;
      try {
        isDir = statSync(join(dir, sub)).isDirectory();
      } catch (err) {
        if (gone(err)) continue;
        throw err;
      }
      out.push(sub);
      if (isDir) walk(sub);
    }
  };
  walk('');
  return out.sort();
}

async function until(check: () => boolean, what: string, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('execute scratch folders', () => {
  let dir: Scratch;
  let tmp: string;
  let hub: MoonhubProcess;
  let client: Client;

  before(async () => {
    dir = scratch();
    tmp = join(dir.dir, 'tmp');
    dir.write('tmp/.keep', '');
    dir.write('plugins/ok.lua', 'mcp.tool("ok", {}, function() return "ok" end)\n');
    const file = dir.write('moonhub.yaml', 'plugins: { dirs: [plugins] }\n');
    hub = await startMoonhub(['--config', file], { TMPDIR: tmp });
    client = (await connectHttpClient(hub.url, 'modern')).client;
  });

  after(async () => {
    await client.close();
    await hub.stop();
    dir.remove();
  });

  const hubFolders = () => tree(tmp).filter((p) => p.startsWith('moonhub-execute-'));

  it('two runs without files, at once, make no folder of their own', async () => {
    const sleeper = 'task.sleep(400) return 1';
    const runs = [
      call(client, 'execute', { code: sleeper }),
      call(client, 'execute', { code: sleeper }),
    ];
    await new Promise((r) => setTimeout(r, 200));
    // At most the hub's one private parent, empty (before: one folder per run).
    const during = hubFolders();
    assert.ok(during.length <= 1, JSON.stringify(during));
    for (const r of await Promise.all(runs)) assert.equal(r.isError, false, r.text);
    assert.ok(hubFolders().length <= 1, JSON.stringify(hubFolders()));
  });

  it('a run that writes gets a fresh folder, 0700 parent, removed when it ends', async () => {
    const code = `
      assert(not vfs.exists("/source/tmp/mine.txt"))
      assert(vfs.write("/source/tmp/mine.txt", "hello"))
      task.sleep(400)
      return vfs.read("/source/tmp/mine.txt")`;
    const run = call(client, 'execute', { code });
    await until(() => hubFolders().some((p) => p.endsWith('/tmp/mine.txt')), 'the run to write');
    const parent = hubFolders().find((p) => !p.includes('/'))!;
    assert.equal(statSync(join(tmp, parent)).mode & 0o777, 0o700);
    const r = await run;
    assert.equal(r.isError, false, r.text);
    assert.match(r.text, /hello/);
    await until(() => hubFolders().length <= 1, 'the run folder to go');
    // The next run starts empty again.
    const next = await call(client, 'execute', {
      code: 'return vfs.exists("/source/tmp/mine.txt")',
    });
    assert.match(next.text, /"result":false/);
  });

  it('a run stopped by its time limit leaves no folder', async () => {
    const code = `
      assert(vfs.write("/source/tmp/late.txt", "x"))
      while true do end`;
    const r = await call(client, 'execute', { code, timeout_ms: 300 });
    assert.equal(r.isError, true);
    await until(() => hubFolders().length <= 1, 'the stopped run folder to go');
  });

  it("the hub's stop removes its private folder", async () => {
    await client.close();
    await hub.stop();
    assert.deepEqual(hubFolders(), []);
    // Restarted for after().
    hub = await startMoonhub(['--config', join(dir.dir, 'moonhub.yaml')], { TMPDIR: tmp });
    client = (await connectHttpClient(hub.url, 'modern')).client;
  });
});
