/**
 * Issue 15, items 3-5: `moonhub new hub` makes a folder that serves as is; `moonhub dev` in it
 * prints the clients' set-up and one human line per call, reloads on save and shows a broken
 * save with its source line while the previous version keeps serving; `moonhub call` and
 * `moonhub list` answer without a client; `new plugin` adds a plugin that loads as is.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/client';
import { BIN } from '../helpers/moonhub-process.js';
import { connectHttpClient } from '../helpers/mcp-client.js';

function cli(cwd: string, args: string[]) {
  const r = spawnSync(process.execPath, [BIN, ...args], { cwd, encoding: 'utf8', timeout: 30_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

function text(result: unknown): string {
  return ((result as { content: { text?: string }[] }).content ?? [])
    .map((c) => c.text ?? '')
    .join('\n');
}

describe('new -> dev -> edit -> call', () => {
  let scratch: string;
  let hubDir: string;
  let dev: ChildProcess;
  let out = '';
  let client: Client;

  const waitFor = async (
    re: RegExp,
    from: number,
    timeoutMs = 15_000,
  ): Promise<RegExpExecArray> => {
    const start = Date.now();
    for (;;) {
      const m = re.exec(out.slice(from));
      if (m) return m;
      if (Date.now() - start > timeoutMs)
        throw new Error(`timed out waiting for ${re} in dev's output:\n${out.slice(from)}`);
      await new Promise((r) => setTimeout(r, 25));
    }
  };

  before(() => {
    scratch = mkdtempSync(join(tmpdir(), 'moonhub-author-'));
    hubDir = join(scratch, 'myhub');
  });

  after(async () => {
    await client?.close().catch(() => undefined);
    if (dev && dev.exitCode === null) {
      const exited = new Promise((r) => dev.once('exit', r));
      dev.kill('SIGTERM');
      await exited;
    }
  });

  it('new hub makes a config, a plugin, .luarc.json pointing at the definitions, a README', () => {
    const r = cli(scratch, ['new', 'hub', 'myhub']);
    assert.equal(r.status, 0, r.stderr);
    for (const f of ['moonhub.yaml', 'plugins/hello.lua', '.luarc.json', 'README.md'])
      assert.ok(existsSync(join(hubDir, f)), f);
    const luarc = JSON.parse(readFileSync(join(hubDir, '.luarc.json'), 'utf8')) as {
      'workspace.library': string[];
    };
    const types = luarc['workspace.library'][0]!;
    assert.ok(
      existsSync(join(types, 'moonhub.lua')) && existsSync(join(types, 'chilkat.lua')),
      types,
    );
    const again = cli(scratch, ['new', 'hub', 'myhub']);
    assert.equal(again.status, 1);
    assert.match(again.stderr, /already exists; nothing was overwritten/);
  });

  it('list and call answer in the folder without a client', () => {
    const list = cli(hubDir, ['list']);
    assert.equal(list.status, 0, list.stderr);
    assert.match(list.stdout, /hello_hello +Greet someone by name/);
    assert.match(list.stdout, /prompts:\n {2}hello_explain/);
    assert.match(list.stdout, /hello:\/\/about/);
    const call = cli(hubDir, ['call', 'hello_hello', '--args', '{"name":"Ada"}']);
    assert.equal(call.status, 0, call.stderr);
    assert.equal((JSON.parse(call.stdout) as { greeting: string }).greeting, 'Hello, Ada!');
    const bad = cli(hubDir, ['call', 'hello_hello', '--args', '{name']);
    assert.equal(bad.status, 1);
    assert.match(bad.stderr, /--args is not JSON/);
    const invalid = cli(hubDir, ['call', 'hello_hello', '--args', '{}']);
    assert.equal(invalid.status, 1);
    assert.match(invalid.stderr, /hello_hello failed: Invalid arguments.*name/);
    const unknown = cli(hubDir, ['call', 'nope']);
    assert.equal(unknown.status, 1);
    assert.match(unknown.stderr, /no tool, prompt or resource 'nope'/);
  });

  it('dev serves, prints client set-up, logs a line per call, reloads and shows a broken save', async () => {
    dev = spawn(process.execPath, [BIN, 'dev', '--port', '0'], {
      cwd: hubDir,
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    dev.stderr!.on('data', (d: Buffer) => (out += d.toString()));
    const url = (await waitFor(/serving MCP at (\S+)/, 0))[1]!;
    await waitFor(/Watching for changes/, 0);
    assert.match(out, new RegExp(`claude mcp add --transport http moonhub ${url}`));
    assert.match(out, /\{"servers":\{"moonhub":\{"type":"http","url":"http:/);
    assert.match(out, /\{"mcpServers":\{"moonhub":\{"url":"http:/);
    assert.match(out, /npx @modelcontextprotocol\/inspector --transport http --server-url http:/);

    client = (await connectHttpClient(url, 'modern')).client;
    let mark = out.length;
    const r1 = await client.callTool({ name: 'hello_hello', arguments: { name: 'Bo' } });
    assert.match(text(r1), /Hello, Bo!/);
    await waitFor(/\d\d:\d\d:\d\d local call hello_hello [\d.]+ ms \d+ B/, mark);
    mark = out.length;
    await client.callTool({ name: 'hello_hello', arguments: {} });
    await waitFor(/call hello_hello [\d.]+ ms ERROR Invalid arguments/, mark);

    // Edit and save: the new version answers.
    const file = join(hubDir, 'plugins', 'hello.lua');
    const source = readFileSync(file, 'utf8');
    mark = out.length;
    writeFileSync(file, source.replace('"!"', '"!!"'));
    await waitFor(/loaded hello/, mark);
    assert.match(
      text(await client.callTool({ name: 'hello_hello', arguments: { name: 'Bo' } })),
      /Hello, Bo!!/,
    );

    // A broken save: the error with its source line; the previous version keeps serving.
    mark = out.length;
    writeFileSync(file, `${source}\nlocal x = = 1\n`);
    const failed = await waitFor(/FAILED hello .*\n {2}(\d+) \| (.*)/, mark);
    assert.equal(failed[2], 'local x = = 1');
    assert.match(
      text(await client.callTool({ name: 'hello_hello', arguments: { name: 'Bo' } })),
      /Hello, Bo!!/,
    );
  });

  it('new plugin adds a plugin with a tool, a prompt and a resource that loads as is', async () => {
    const r = cli(hubDir, ['new', 'plugin', 'weather']);
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stderr, /created plugins\/weather\.lua/);
    const mark = out.length;
    await waitFor(/loaded weather/, mark);
    const tools = (await client.listTools()).tools.map((t) => t.name);
    assert.ok(tools.includes('weather_hello'), tools.join(', '));
    const prompt = await client.getPrompt({
      name: 'weather_explain',
      arguments: { topic: 'rain' },
    });
    assert.match(JSON.stringify(prompt.messages), /Explain rain/);
    const about = await client.readResource({ uri: 'weather://about' });
    assert.match(JSON.stringify(about.contents), /weather_hello/);
    const bad = cli(hubDir, ['new', 'plugin', '../escape']);
    assert.equal(bad.status, 1);
    assert.match(bad.stderr, /is not a plugin name/);
  });
});
