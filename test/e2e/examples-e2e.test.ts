/**
 * The quick start, end to end: `moonhub serve` on the bundled example plugins, reached by the SDK
 * client over HTTP in both eras and over stdio; `moonhub run` scripts; bad input on the wire.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { connectHttpClient, type Era } from '../helpers/mcp-client.js';
import { BIN, ROOT, startMoonhub, type MoonhubProcess } from '../helpers/moonhub-process.js';

const EXAMPLES = join(ROOT, 'examples', 'plugins');

type AnyClient = Pick<
  Client,
  | 'listTools'
  | 'callTool'
  | 'getPrompt'
  | 'readResource'
  | 'listResources'
  | 'listResourceTemplates'
  | 'listPrompts'
>;

/** The same walk through the examples, whatever the transport. */
async function exerciseExamples(client: AnyClient): Promise<void> {
  const names = (await client.listTools()).tools.map((t) => t.name);
  for (const n of [
    'notes_add',
    'notes_get',
    'notes_list',
    'inbox_send',
    'inbox_read',
    'clock_now',
  ]) {
    assert.ok(names.includes(n), `${n} is listed`);
  }
  const added = await client.callTool({
    name: 'notes_add',
    arguments: { title: 'Buy milk', body: 'two litres', tags: ['home'] },
  });
  const note = added.structuredContent as { id: number | string; title: string };
  assert.equal(note.title, 'Buy milk');
  const got = await client.callTool({ name: 'notes_get', arguments: { id: note.id } });
  assert.equal((got.structuredContent as { title: string }).title, 'Buy milk');

  const fixed = (await client.listResources()).resources.map((r) => r.uri);
  assert.ok(fixed.includes('note://index'));
  const templates = (await client.listResourceTemplates()).resourceTemplates.map(
    (r) => r.uriTemplate,
  );
  assert.ok(templates.includes('note://{id}'));
  const index = await client.readResource({ uri: 'note://index' });
  assert.match(String((index.contents[0] as { text?: string }).text), /Buy milk/);
  const one = await client.readResource({ uri: `note://${note.id}` });
  assert.match(String((one.contents[0] as { text?: string }).text), /two litres/);
  assert.equal(one.contents[0]?.mimeType, 'text/markdown');

  const prompts = (await client.listPrompts()).prompts.map((p) => p.name);
  assert.ok(prompts.includes('code-review'));
  const review = await client.getPrompt({
    name: 'code-review',
    arguments: { language: 'Lua', focus: 'security' },
  });
  assert.ok(review.messages.length >= 1);
  assert.match(JSON.stringify(review.messages), /Lua/);
  await assert.rejects(client.getPrompt({ name: 'code-review', arguments: {} }), /language/);
}

describe('examples over HTTP', () => {
  let hub: MoonhubProcess;
  before(async () => {
    hub = await startMoonhub(['--plugins', EXAMPLES, '--no-watch']);
  });
  after(async () => hub.stop());

  for (const era of ['legacy', 'modern'] as Era[]) {
    it(`lists and calls tools, reads fixed and templated resources, gets prompts (${era})`, async () => {
      const { client } = await connectHttpClient(hub.url, era);
      try {
        await exerciseExamples(client);
      } finally {
        await client.close();
      }
    });
  }

  it("keeps each session's inbox private", async () => {
    const alice = await connectHttpClient(hub.url, 'legacy');
    const bob = await connectHttpClient(hub.url, 'legacy');
    try {
      const aliceId = (await alice.client.callTool({ name: 'inbox_whoami', arguments: {} }))
        .structuredContent as { session_uuid: string };
      await bob.client.callTool({
        name: 'inbox_send',
        arguments: { to: aliceId.session_uuid, text: 'hello alice' },
      });
      const bobRead = await bob.client.callTool({ name: 'inbox_read', arguments: {} });
      assert.doesNotMatch(JSON.stringify(bobRead), /hello alice/, "bob cannot drain alice's inbox");
      const aliceRead = await alice.client.callTool({ name: 'inbox_read', arguments: {} });
      assert.match(JSON.stringify(aliceRead), /hello alice/);
      const again = await alice.client.callTool({ name: 'inbox_read', arguments: {} });
      assert.doesNotMatch(JSON.stringify(again), /hello alice/, 'reading drains');
    } finally {
      await alice.client.close();
      await bob.client.close();
    }
  });

  it('gives the inbox an identity over plain stdio, and tells a caller without one how to get it', async () => {
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [BIN, 'serve', '--stdio', '--no-watch', '--plugins', EXAMPLES],
      stderr: 'ignore',
    });
    const client = new Client({ name: 'inbox-stdio', version: '1.0.0' });
    await client.connect(transport);
    try {
      const me = await client.callTool({ name: 'inbox_whoami', arguments: {} });
      assert.notEqual(me.isError, true, JSON.stringify(me));
      assert.match((me.structuredContent as { session_uuid: string }).session_uuid, /^stdio-/);
    } finally {
      await client.close();
    }
    // A 2026-07-28 client on a hub without authentication carries no session at all.
    const modern = await connectHttpClient(hub.url, 'modern');
    try {
      const r = await modern.client.callTool({ name: 'inbox_read', arguments: {} });
      assert.equal(r.isError, true);
      assert.match(JSON.stringify(r), /moonhub session create --agent NAME/);
    } finally {
      await modern.client.close();
    }
  });

  it('answers bad input with the right JSON-RPC error and stays up', async () => {
    const post = (body: string | Buffer, headers: Record<string, string> = {}) =>
      fetch(hub.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-protocol-version': '2026-07-28',
          ...headers,
        },
        body,
      });
    const meta = {
      'io.modelcontextprotocol/protocolVersion': '2026-07-28',
      'io.modelcontextprotocol/clientCapabilities': {},
    };

    const malformed = await post('{"jsonrpc":"2.0","id":1,"method":');
    assert.equal(((await malformed.json()) as { error: { code: number } }).error.code, -32700);

    const shape = await post(JSON.stringify({ jsonrpc: '1.0', id: 1, method: 7 }));
    assert.equal(((await shape.json()) as { error: { code: number } }).error.code, -32600);

    const unknown = await post(
      JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/explode', params: { _meta: meta } }),
      {
        'mcp-method': 'tools/explode',
      },
    );
    assert.equal(((await unknown.json()) as { error: { code: number } }).error.code, -32601);

    const huge = await post(Buffer.alloc(10 * 1024 * 1024, 0x20));
    assert.equal(huge.status, 413);

    const badArgs = await post(
      JSON.stringify({
        jsonrpc: '2.0',
        id: 3,
        method: 'tools/call',
        params: { name: 'notes_add', arguments: { title: 42 }, _meta: meta },
      }),
      { 'mcp-method': 'tools/call', 'mcp-name': 'notes_add' },
    );
    const badResult = (await badArgs.json()) as {
      result: { isError: boolean; content: { text: string }[] };
    };
    assert.equal(badResult.result.isError, true);
    assert.match(badResult.result.content[0]!.text, /argument 'title' must be string/);

    assert.ok(hub.alive());
    const { client } = await connectHttpClient(hub.url, 'modern');
    try {
      assert.ok((await client.listTools()).tools.length > 0);
    } finally {
      await client.close();
    }
  });
});

for (const era of ['legacy', 'modern'] as Era[]) {
  describe(`examples over stdio (${era})`, () => {
    it('serves the same surface on stdin/stdout', async () => {
      const client = new Client(
        { name: 'e2e-stdio', version: '1.0.0' },
        { versionNegotiation: { mode: era === 'modern' ? { pin: '2026-07-28' } : 'legacy' } },
      );
      const transport = new StdioClientTransport({
        command: process.execPath,
        args: [BIN, 'serve', '--stdio', '--no-watch', '--plugins', EXAMPLES],
        stderr: 'pipe',
      });
      await client.connect(transport);
      try {
        await exerciseExamples(client);
      } finally {
        await client.close();
      }
    });
  });
}

describe('moonhub run', () => {
  const dir = mkdtempSync(join(tmpdir(), 'moonhub-run-'));

  it('runs a script against the loaded plugins and prints its return value as JSON', () => {
    const script = join(dir, 'ok.lua');
    writeFileSync(
      script,
      `local content, err = mcp.call_tool("notes_add", { title = "from a script" })
       assert(content, err)
       local list = mcp.call_tool("notes_list", {})
       print("this goes to stderr")
       return { added = json.decode(content[1].text).title, tools = mcp.count(), list_is_table = type(list) == "table" }`,
    );
    const r = spawnSync(process.execPath, [BIN, 'run', script, '--plugins', EXAMPLES], {
      encoding: 'utf8',
    });
    assert.equal(r.status, 0, r.stderr);
    const out = JSON.parse(r.stdout) as { added: string; tools: number; list_is_table: boolean };
    assert.equal(out.added, 'from a script');
    assert.ok(out.tools >= 10);
    assert.equal(out.list_is_table, true);
    assert.match(r.stderr, /this goes to stderr/);
  });

  it('prints a Lua error on stderr with exit code 1', () => {
    const script = join(dir, 'bad.lua');
    writeFileSync(script, 'local t = nil\nreturn t.field\n');
    const r = spawnSync(process.execPath, [BIN, 'run', script], { encoding: 'utf8' });
    assert.equal(r.status, 1);
    assert.equal(r.stdout, '');
    assert.match(r.stderr, /bad\.lua:2: attempt to index a nil value/);
  });

  it('answers --help and --version', () => {
    const help = spawnSync(process.execPath, [BIN, '--help'], { encoding: 'utf8' });
    assert.equal(help.status, 0);
    assert.match(help.stdout, /serve/);
    assert.match(help.stdout, /run/);
    const version = spawnSync(process.execPath, [BIN, '--version'], { encoding: 'utf8' });
    assert.match(version.stdout.trim(), /^\d+\.\d+\.\d+$/);
  });
});
