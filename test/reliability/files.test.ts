/**
 * Files (issue 12, item 4) against a real hub: an `execute` run's /source/ is a fresh scratch
 * folder (never the hub's working directory), a configured root is read-only, writes have a
 * quota per run and per plugin, a (dangling) symlink cannot lead a write out of the root, and a
 * plugin writing its own tmp/ is not reloaded (its in-memory state survives).
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Client } from '@modelcontextprotocol/client';
import { connectHttpClient } from '../helpers/mcp-client.js';
import { startMoonhub, type MoonhubProcess } from '../helpers/moonhub-process.js';
import { call, scratch, type Scratch } from './helpers.js';

const KEEPER = String.raw`
local count = 0
mcp.tool("keeper.bump", {}, function()
  count = count + 1
  local ok, err = vfs.write("/source/tmp/state.txt", tostring(count))
  return { count = count, ok = ok == true, err = err }
end)
mcp.tool("keeper.write", {
  input_schema = { type = "object", properties = { path = { type = "string" }, size = { type = "integer" } } },
}, function(p)
  local ok, err = vfs.write(p.path, string.rep("w", p.size or 1))
  return { ok = ok == true, err = err }
end)
mcp.tool("ok", {}, function() return "ok" end)
`;

function config(extra: string): string {
  return `plugins: { dirs: [plugins] }
plugin_limits: { write_bytes: 100000 }
${extra}`;
}

/** Runs a script; `text` is the JSON of its return value (or the error). */
async function execute(client: Client, code: string): Promise<{ isError: boolean; text: string }> {
  const r = await call(client, 'execute', { code });
  if (r.isError) return r;
  return {
    isError: false,
    text: JSON.stringify((JSON.parse(r.text) as { result: unknown }).result),
  };
}

describe('execute scripts and plugins on files', () => {
  let dir: Scratch;
  let hub: MoonhubProcess;
  let client: Client;
  let outside: string;

  before(async () => {
    dir = scratch();
    dir.write('plugins/keeper/init.lua', KEEPER);
    mkdirSync(join(dir.dir, 'plugins/keeper/tmp'));
    outside = join(dir.dir, 'outside');
    mkdirSync(outside);
    // A dangling link inside the plugin's tmp/, pointing at a file that does not exist yet.
    symlinkSync(join(outside, 'escaped.txt'), join(dir.dir, 'plugins/keeper/tmp/link'));
    symlinkSync(outside, join(dir.dir, 'plugins/keeper/tmp/dirlink'));
    const file = dir.write('moonhub.yaml', config('execute: { write_bytes: 100000 }'));
    hub = await startMoonhub(['--config', file]);
    client = (await connectHttpClient(hub.url, 'modern')).client;
  });

  after(async () => {
    await client.close();
    await hub.stop();
    dir.remove();
  });

  it("gives each execute run a fresh, empty /source/, never the hub's folder", async () => {
    const first = await execute(
      client,
      `assert(vfs.write("/source/tmp/run.txt", "mine"))
       return { list = vfs.list("/source/"), pkg = vfs.exists("package.json"), cfg = vfs.exists("../moonhub.yaml") }`,
    );
    assert.equal(first.isError, false, first.text);
    const seen = JSON.parse(first.text) as { list: string[]; pkg: boolean; cfg: boolean };
    assert.deepEqual(seen.list, ['tmp']);
    assert.equal(seen.pkg, false, "the hub's working directory is not /source/");
    assert.equal(seen.cfg, false);
    const second = await execute(client, `return vfs.exists("/source/tmp/run.txt")`);
    assert.equal(second.text, 'false', 'a run does not see the one before');
  });

  it('stops an execute run at its write quota', async () => {
    const r = await execute(
      client,
      `local ok, err = vfs.write("/source/tmp/a.bin", string.rep("x", 60000))
       assert(ok, err)
       local ok2, err2 = vfs.write("/source/tmp/b.bin", string.rep("x", 60000))
       return err2`,
    );
    assert.match(
      JSON.parse(r.text) as string,
      /write quota exceeded: \/source\/tmp\/ may hold at most 100000 bytes \(execute\.write_bytes\)/,
    );
    const next = await execute(
      client,
      `return vfs.write("/source/tmp/c.bin", string.rep("x", 60000))`,
    );
    assert.equal(next.text, 'true', 'the next run has a quota of its own');
  });

  it('stops a plugin at its tmp/ quota, counting what is already there', async () => {
    const a = await call(client, 'keeper.write', { path: '/source/tmp/big1', size: 60000 });
    assert.deepEqual(JSON.parse(a.text), { ok: true });
    const b = await call(client, 'keeper.write', { path: '/source/tmp/big2', size: 60000 });
    assert.match(
      JSON.parse(b.text).err as string,
      /write quota exceeded: \/source\/tmp\/ may hold at most 100000 bytes \(plugin_limits\.write_bytes\)/,
    );
    // Rewriting a file replaces its bytes rather than adding to them.
    const c = await call(client, 'keeper.write', { path: '/source/tmp/big1', size: 50000 });
    assert.deepEqual(JSON.parse(c.text), { ok: true });
  });

  it('refuses a write through a dangling symlink or a link out of the root', async () => {
    const a = await call(client, 'keeper.write', { path: '/source/tmp/link' });
    assert.equal(JSON.parse(a.text).ok, false);
    assert.match(JSON.parse(a.text).err as string, /cannot be resolved|leads outside/);
    const b = await call(client, 'keeper.write', { path: '/source/tmp/dirlink/new.txt' });
    assert.match(JSON.parse(b.text).err as string, /leads outside \/source\//);
    assert.equal(existsSync(join(outside, 'escaped.txt')), false, 'nothing written outside');
    assert.equal(existsSync(join(outside, 'new.txt')), false);
    assert.ok(!a.text.includes(dir.dir) && !b.text.includes(dir.dir), 'no absolute path');
  });

  it('does not reload a plugin that writes its own tmp/ (its state survives)', async () => {
    const from = hub.log().length;
    const first = JSON.parse((await call(client, 'keeper.bump')).text) as {
      count: number;
      ok?: boolean;
    };
    assert.equal(first.ok, true);
    // Well past the watcher's debounce.
    await new Promise((r) => setTimeout(r, 800));
    const second = JSON.parse((await call(client, 'keeper.bump')).text) as {
      count: number;
      ok?: boolean;
    };
    assert.equal(second.count, first.count + 1, 'the in-memory counter survived');
    assert.doesNotMatch(hub.log().slice(from), /plugin reloaded/);
  });
});

describe('a configured execute.root', () => {
  let dir: Scratch;
  let hub: MoonhubProcess;
  let client: Client;

  before(async () => {
    dir = scratch();
    dir.write('plugins/keeper/init.lua', KEEPER);
    dir.write('shared/readme.txt', 'shared data');
    const file = dir.write('moonhub.yaml', config('execute: { root: shared }'));
    hub = await startMoonhub(['--config', file, '--no-watch']);
    client = (await connectHttpClient(hub.url, 'legacy')).client;
  });

  after(async () => {
    await client.close();
    await hub.stop();
    dir.remove();
  });

  it('is readable and read-only', async () => {
    const r = await execute(
      client,
      `local ok, err = vfs.write("/source/tmp/x.txt", "x")
       return { read = vfs.read("readme.txt"), err = err }`,
    );
    const out = JSON.parse(r.text) as { read: string; err: string };
    assert.equal(out.read, 'shared data');
    assert.match(out.err, /read-only \(execute\.root is shared by every run/);
    assert.equal(existsSync(join(dir.dir, 'shared/tmp')), false);
  });
});
