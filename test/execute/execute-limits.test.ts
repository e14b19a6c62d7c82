/**
 * execute's limits on a real in-process HTTP server (SDK client): wall time, instructions,
 * memory, output, result size, number of calls and their concurrency, pictures, and every
 * mcp.call ceiling through the worker. Each is refused with its named reason, other calls are
 * served meanwhile, and the hub is unharmed. Also the caller's view: a tool outside it is refused
 * exactly like an unknown tool (a registry-level filter, as scoping will set it).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { registerCodeMode, type CodeModeBuiltins } from '../../src/execute/index.js';
import { silentLogger } from '../../src/log.js';
import { Registry } from '../../src/registry/registry.js';
import { startHttpServer, type HttpServerHandle } from '../../src/server/index.js';
import { connectHttpClient, waitFor } from '../helpers/mcp-client.js';
import { ROOT } from '../helpers/moonhub-process.js';

type Client = Awaited<ReturnType<typeof connectHttpClient>>['client'];
interface Result {
  content: { type: string; text?: string }[];
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
}

const IMAGES = join(ROOT, 'test', 'fixtures', 'images');
let registry: Registry;
let builtins: CodeModeBuiltins;
let server: HttpServerHandle;
let client: Client;
let recorded = 0;
let blockAborted = 0;
let blockEntered = 0;

before(async () => {
  registry = new Registry({ hubId: 'limits-hub' });
  registry.addTool('tools', {
    name: 'echo',
    description: 'Echoes text',
    inputSchema: { type: 'object', properties: { text: { type: 'string' } } },
    handler: async (args) => ({ content: [{ type: 'text', text: String(args.text) }] }),
  });
  registry.addTool('tools', {
    name: 'record',
    description: 'Counts its calls',
    inputSchema: { type: 'object' },
    handler: async () => {
      recorded++;
      return { content: [{ type: 'text', text: 'ok' }] };
    },
  });
  registry.addTool('tools', {
    name: 'nap',
    description: 'Sleeps ms',
    inputSchema: { type: 'object', properties: { ms: { type: 'integer' } } },
    handler: async (args) => {
      await new Promise((r) => setTimeout(r, Number(args.ms ?? 100)));
      return { content: [{ type: 'text', text: 'rested' }] };
    },
  });
  registry.addTool('tools', {
    name: 'block',
    description: 'Waits until its call is aborted',
    inputSchema: { type: 'object' },
    handler: (_args, ctx) =>
      new Promise((resolve) => {
        blockEntered++;
        ctx.signal?.addEventListener('abort', () => {
          blockAborted++;
          resolve({ content: [{ type: 'text', text: 'aborted' }] });
        });
      }),
  });
  registry.addTool('secret', {
    name: 'vault',
    description: 'Outside some views',
    inputSchema: { type: 'object' },
    handler: async () => ({ content: [{ type: 'text', text: 'the secret' }] }),
  });
  builtins = registerCodeMode(
    registry,
    {
      timeoutMs: 5000,
      instructions: 50_000_000,
      memoryBytes: 64 * 1024 * 1024,
      outputBytes: 1000,
      resultBytes: 2000,
      maxCalls: 5,
      maxConcurrentCalls: 3,
      root: IMAGES,
    },
    silentLogger,
  );
  server = await startHttpServer(registry, { port: 0 });
  client = (await connectHttpClient(server.url, 'modern')).client;
});

after(async () => {
  await client.close();
  await server.close();
  await builtins.close();
});

async function execute(code: string, timeout_ms?: number): Promise<Result> {
  const args: Record<string, unknown> = { code };
  if (timeout_ms !== undefined) args.timeout_ms = timeout_ms;
  return (await client.callTool({ name: 'execute', arguments: args })) as Result;
}

function errorText(r: Result): string {
  assert.equal(r.isError, true, `expected an error, got ${JSON.stringify(r).slice(0, 300)}`);
  return r.content[0]!.text!;
}

describe('execute limits, each with its named reason', () => {
  const cases: { name: string; code: string; timeout?: number; reason: RegExp }[] = [
    {
      name: 'wall time',
      code: 'task.sleep(10000)',
      timeout: 300,
      reason: /^timeout: the call ran longer than its 300 ms limit/,
    },
    {
      name: 'instructions',
      code: 'local x = 0 while true do x = x + 1 end',
      // Time enough that only the budget can end it, even on a busy machine.
      timeout: 60_000,
      reason:
        /^execute:1: instruction budget exceeded: the call ran more than 50000000 Lua instructions|^instruction budget exceeded/,
    },
    {
      name: 'memory (a growing table)',
      code: 'local t = {} for i = 1, 1e8 do t[i] = i end',
      reason: /memory limit exceeded: the Lua state may use at most 64 MiB/,
    },
    {
      name: 'output',
      code: 'for i = 1, 1000 do print("line " .. i) end',
      reason: /output limit exceeded: a script may print at most 1000 bytes/,
    },
    {
      name: 'output, even when the script catches the error',
      code: 'for i = 1, 1000 do pcall(print, "line " .. i) end return "done"',
      reason: /^output limit exceeded: a script may print at most 1000 bytes/,
    },
    {
      name: 'result size',
      code: 'return string.rep("x", 5000)',
      reason:
        /^result limit exceeded: the returned value is 5002 bytes of JSON; the ceiling is 2000/,
    },
    {
      name: 'pictures',
      code: `local p = mcp.image("rgba-7x5.png") local t = {} for i = 1, 17 do t[i] = p end return t`,
      reason: /too many pictures: a result carries at most 16/,
    },
  ];
  for (const c of cases) {
    it(c.name, async () => {
      assert.match(errorText(await execute(c.code, c.timeout)), c.reason);
    });
  }

  it('number of calls: the sixth call is refused before its tool runs', async () => {
    recorded = 0;
    const r = await execute(
      `local out = {}
       for i = 1, 6 do out[i] = task.await(mcp.call("record")) end
       return out`,
    );
    const list = (r.structuredContent as { result: { is_error: boolean; content: string }[] })
      .result;
    assert.deepEqual(
      list.map((x) => x.is_error),
      [false, false, false, false, false, true],
    );
    assert.equal(list[5]!.content, 'call limit exceeded: a script may start at most 5 calls');
    assert.equal(recorded, 5);
  });

  it('concurrency: a fourth call in flight is refused', async () => {
    const r = await execute(
      `local ids = {}
       for i = 1, 4 do ids[i] = mcp.call("nap", { ms = 200 }) end
       local out = {}
       for i, x in ipairs(task.await(ids)) do out[i] = x.content end
       return out`,
    );
    const out = (r.structuredContent as { result: string[] }).result;
    assert.deepEqual(out.slice(0, 3), ['rested', 'rested', 'rested']);
    assert.match(out[3]!, /^concurrency limit exceeded: at most 3 calls may run at once/);
  });

  it('tools.use raises the refusal as a Lua error', async () => {
    const r = await execute(
      `local ok, err = pcall(tools.use, "record", { s = string.rep("a", 16 * 1024 * 1024 + 1) })
       return err`,
    );
    assert.match(
      (r.structuredContent as { result: string }).result,
      /tools.use refused: argument 's' is a string of 16777217 bytes; the ceiling is 16777216 bytes/,
    );
  });

  it('every mcp.call ceiling, through the worker, refuses before the tool runs', async () => {
    recorded = 0;
    const r = await execute(
      `local function deep(n) local t = {} for _ = 1, n do t = { a = t } end return t end
       local keyed = {} for i = 1, 4097 do keyed["k" .. i] = i end
       local seq = {} for i = 1, 262145 do seq[i] = i end
       local reasons = {}
       for i, args in ipairs({
         { s = string.rep("a", 16 * 1024 * 1024 + 1) },
         { s = "\\xff" },
         { m = keyed },
         { l = seq },
         deep(64),
         "{not json",
       }) do
         reasons[i] = task.await(mcp.call("record", args)).content
       end
       return reasons`,
      20_000,
    );
    const reasons = (r.structuredContent as { result: string[] }).result;
    assert.equal(recorded, 0, 'no tool ran');
    const expected = [
      /argument 's' is a string of 16777217 bytes; the ceiling is 16777216 bytes/,
      /argument 's' is a string of 1 bytes that is not UTF-8 text/,
      /argument 'm' is a table with 4097 keyed entries; the ceiling is 4096/,
      /argument 'l' is a table with 262145 sequence items; the ceiling is 262144/,
      /is nested 65 tables deep; the ceiling is 64/,
      /args is a string of 9 bytes that is not JSON/,
    ];
    expected.forEach((re, i) => assert.match(reasons[i]!, re));
  });

  it('serves other calls while a script runs, and the hub is unharmed afterwards', async () => {
    // The script blocks its worker in C for a while (a pattern that backtracks), then gets the
    // hard stop; the echo must be answered before that.
    let scriptEnded = false;
    const long = execute('return ("a"):rep(200):find(".-.-.-.-.-b")', 1000).then((r) => {
      scriptEnded = true;
      return r;
    });
    await new Promise((r) => setTimeout(r, 100));
    const echo = (await client.callTool({
      name: 'echo',
      arguments: { text: 'meanwhile' },
    })) as Result;
    assert.equal(echo.content[0]!.text, 'meanwhile');
    assert.equal(scriptEnded, false, 'the echo was answered while the script was stuck');
    assert.match(errorText(await long), /stopped hard/);
    const ok = await execute('return { fine = true }');
    assert.deepEqual(ok.structuredContent, { result: { fine: true }, output: '' });
  });

  it('mcp.image reads a file under /source/ and raises on a broken header', async () => {
    const r = await execute(
      `local ok, err = pcall(mcp.image, { data = "iVBORw0KGgo=" })
       local gif = mcp.image("/source/indexed-7x5.gif")
       return { err = err, w = gif.width, h = gif.height, mime = gif.mime_type, path = gif.path, bytes = gif.bytes }`,
    );
    const s = (r.structuredContent as { result: Record<string, unknown> }).result;
    assert.match(String(s.err), /mcp.image: broken PNG header/);
    assert.deepEqual(
      { ...s, err: undefined },
      {
        err: undefined,
        w: 7,
        h: 5,
        mime: 'image/gif',
        path: '/source/indexed-7x5.gif',
        bytes: readFileSync(join(IMAGES, 'indexed-7x5.gif')).length,
      },
    );
  });
});

describe("the caller's view", () => {
  const view = { hub_id: 'limits-hub', filter: (owner: string) => owner !== 'secret' };

  it('refuses a tool outside the view exactly like an unknown tool, and hides it from listTools', async () => {
    const r = await registry.callTool(
      'execute',
      {
        code: `return { hidden = task.await(mcp.call("vault")).content,
                         unknown = task.await(mcp.call("nope")).content,
                         names = mcp.listTools(),
                         use = select(2, pcall(tools.use, "vault")) }`,
      },
      view,
    );
    const s = (r.structuredContent as { result: Record<string, unknown> }).result;
    assert.equal(s.hidden, 'Unknown tool: vault');
    assert.equal(s.unknown, 'Unknown tool: nope');
    assert.match(String(s.use), /Unknown tool: vault$/);
    assert.deepEqual(s.names, ['block', 'echo', 'nap', 'record', 'search_tools']);
    // Without the filter the same script reaches it.
    const open = await registry.callTool(
      'execute',
      { code: 'return task.await(mcp.call("vault")).content' },
      { hub_id: 'limits-hub' },
    );
    assert.equal((open.structuredContent as { result: string }).result, 'the secret');
  });

  it('search_tools searches within the view', async () => {
    const r = await registry.callTool('search_tools', { query: 'outside views' }, view);
    assert.deepEqual((r.structuredContent as { tools: unknown[] }).tools, []);
    const all = await registry.callTool(
      'search_tools',
      { query: 'outside views' },
      { hub_id: 'h' },
    );
    assert.equal((all.structuredContent as { tools: { name: string }[] }).tools[0]!.name, 'vault');
  });
});

describe("the caller's view over HTTP (the server's filterFor)", () => {
  it('an execute script reaches only what the client sees', async () => {
    const scoped = await startHttpServer(registry, {
      port: 0,
      filterFor: () => (owner) => owner !== 'secret',
    });
    const { client: c } = await connectHttpClient(scoped.url, 'legacy');
    try {
      const names = (await c.listTools()).tools.map((t) => t.name);
      assert.ok(!names.includes('vault'));
      await assert.rejects(c.callTool({ name: 'vault', arguments: {} }), /Unknown tool: vault/);
      const r = (await c.callTool({
        name: 'execute',
        arguments: {
          code: `return { task.await(mcp.call("vault")).content, task.await(mcp.call("echo", { text = "seen" })).content }`,
        },
      })) as Result;
      assert.deepEqual((r.structuredContent as { result: string[] }).result, [
        'Unknown tool: vault',
        'seen',
      ]);
    } finally {
      await c.close();
      await scoped.close();
    }
  });
});

describe('cancellation', () => {
  it('a cancelled execute call stops its script and aborts the inner calls', async () => {
    const { client: c } = await connectHttpClient(server.url, 'legacy');
    try {
      const ctl = new AbortController();
      const call = c.callTool(
        {
          name: 'execute',
          arguments: { code: 'tools.use("block") return "never"', timeout_ms: 60_000 },
        },
        { signal: ctl.signal },
      );
      await waitFor(() => blockEntered === 1, 10_000, 'the script reached its inner call');
      ctl.abort();
      await assert.rejects(call);
      await waitFor(() => blockAborted === 1, 10_000, 'the inner call was aborted');
      const r = (await c.callTool({
        name: 'execute',
        arguments: { code: 'return "next"' },
      })) as Result;
      assert.equal((r.structuredContent as { result: string }).result, 'next');
    } finally {
      await c.close();
    }
  });
});
