/**
 * The execute tool on a real moonhub process, through the SDK client in both eras: fan-out with
 * mcp.call + task.await (concurrent), polling with task.sleep, three pictures in a nested result,
 * search_tools, and a script stuck in a pattern match that gets a hard stop while the hub keeps
 * serving other calls.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { connectHttpClient } from '../helpers/mcp-client.js';
import { ROOT, startMoonhub, type MoonhubProcess } from '../helpers/moonhub-process.js';

const PLUGINS = join(ROOT, 'test', 'fixtures', 'code-mode-plugins');
const IMAGES = join(ROOT, 'test', 'fixtures', 'images');

type Client = Awaited<ReturnType<typeof connectHttpClient>>['client'];
interface Result {
  content: { type: string; text?: string; data?: string; mimeType?: string }[];
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
}

let hub: MoonhubProcess;
before(async () => {
  hub = await startMoonhub(['--plugins', PLUGINS, '--no-watch']);
});
after(() => hub.stop());

async function execute(client: Client, code: string, timeout_ms?: number): Promise<Result> {
  const args: Record<string, unknown> = { code };
  if (timeout_ms !== undefined) args.timeout_ms = timeout_ms;
  return (await client.callTool({ name: 'execute', arguments: args })) as Result;
}

for (const era of ['legacy', 'modern'] as const) {
  describe(`execute over HTTP (${era})`, () => {
    let client: Client;
    before(async () => {
      client = (await connectHttpClient(hub.url, era)).client;
    });
    after(() => client.close());

    it('is listed with a description that teaches the API, next to search_tools', async () => {
      const tools = (await client.listTools()).tools;
      const exec = tools.find((t) => t.name === 'execute');
      assert.ok(exec, 'execute is listed');
      for (const word of ['mcp.call', 'task.await', 'tools.use', 'Example']) {
        assert.ok(exec.description?.includes(word), `the description mentions ${word}`);
      }
      assert.ok(tools.some((t) => t.name === 'search_tools'));
    });

    it('fans out ten calls and collects them with task.await; they ran concurrently', async () => {
      await client.callTool({ name: 'work.peak', arguments: {} });
      const r = await execute(
        client,
        `local ids = {}
         for i = 1, 10 do ids[i] = mcp.call("work.slow", { n = i, ms = 300 }) end
         local out = {}
         for i, r in ipairs(task.await(ids)) do out[i] = json.decode(r.content).n end
         print("collected", #out)
         return { values = out, peak = tools.use("work.peak").peak }`,
      );
      assert.equal(r.isError, undefined, JSON.stringify(r));
      const s = r.structuredContent as {
        result: { values: number[]; peak: number };
        output: string;
      };
      assert.deepEqual(s.result.values, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
      assert.equal(s.result.peak, 10, 'all ten calls were in flight together');
      assert.equal(s.output, 'collected\t10');
      assert.deepEqual(JSON.parse(r.content[0]!.text!), s);
    });

    it('polls in a loop with task.sleep', async () => {
      const r = await execute(
        client,
        `local id = mcp.call("work.slow", { n = 5, ms = 200 })
         local polls, res = 0, nil
         while true do
           polls = polls + 1
           res = mcp.poll(id)
           if res then break end
           task.sleep(25)
         end
         return { polls = polls, content = res.content, is_error = res.is_error }`,
      );
      const s = r.structuredContent as {
        result: { polls: number; content: string; is_error: boolean };
      };
      assert.ok(s.result.polls > 1, 'polled more than once');
      assert.equal(s.result.is_error, false);
      assert.deepEqual(JSON.parse(s.result.content), { n: 5 });
    });

    it('returns three pictures from a nested table as image items with placeholders', async () => {
      const b64 = (f: string) => readFileSync(join(IMAGES, f)).toString('base64');
      const r = await execute(
        client,
        `local png = mcp.image({ data = "${b64('rgba-7x5.png')}" })
         local jpg = mcp.image({ data = "${b64('progressive-7x5.jpg')}" })
         local webp = mcp.image({ data = "${b64('lossless-7x5.webp')}" })
         return { title = "three", shots = { first = png, more = { jpg, { deep = webp } } }, size = png.width .. "x" .. png.height }`,
      );
      assert.equal(r.isError, undefined, JSON.stringify(r));
      const images = r.content.filter((c) => c.type === 'image');
      assert.equal(images.length, 3);
      const s = r.structuredContent as { result: Record<string, unknown> };
      // Numbering follows the walk of the value (Lua's key order); each placeholder names its own.
      const shots = s.result.shots as {
        first: { type: string; image: number };
        more: [{ type: string; image: number }, { deep: { type: string; image: number } }];
      };
      const placed = [shots.first, shots.more[0], shots.more[1].deep];
      assert.deepEqual(
        placed.map((p) => p.type),
        ['image', 'image', 'image'],
      );
      assert.deepEqual(placed.map((p) => p.image).sort(), [1, 2, 3]);
      assert.deepEqual(
        placed.map((p) => images[p.image - 1]!.mimeType),
        ['image/png', 'image/jpeg', 'image/webp'],
      );
      assert.equal(images[shots.first.image - 1]!.data, b64('rgba-7x5.png'));
      assert.equal(s.result.title, 'three');
      assert.equal(s.result.size, '7x5');
    });

    it('search_tools finds tools by words and returns their schemas', async () => {
      const r = (await client.callTool({
        name: 'search_tools',
        arguments: { query: 'overlapped slow' },
      })) as Result;
      const s = r.structuredContent as { tools: { name: string; inputSchema: unknown }[] };
      assert.equal(s.tools[0]!.name, 'work.slow');
      assert.deepEqual(
        Object.keys((s.tools[0]!.inputSchema as { properties: object }).properties).sort(),
        ['ms', 'n'],
      );
    });

    it('reports a Lua error as an isError result naming it', async () => {
      const r = await execute(client, `print("before") error("boom")`);
      assert.equal(r.isError, true);
      assert.match(r.content[0]!.text!, /execute:1: boom/);
      assert.match(r.content[0]!.text!, /--- output ---\nbefore/);
    });
  });
}

describe('the hard stop', () => {
  it('stops a script stuck in a pattern match while other calls are served', async () => {
    const { client } = await connectHttpClient(hub.url, 'modern');
    try {
      const started = Date.now();
      const stuck = execute(client, `return ("a"):rep(200):find(".-.-.-.-.-b")`, 500);
      // Meanwhile the hub answers other calls, a plugin tool and another script.
      await new Promise((r) => setTimeout(r, 100));
      const echo = (await client.callTool({
        name: 'work.echo',
        arguments: { text: 'alive' },
      })) as Result;
      assert.equal(echo.content[0]!.text, 'alive');
      const other = await execute(client, `return 6 * 7`);
      assert.equal((other.structuredContent as { result: number }).result, 42);
      const r = await stuck;
      assert.equal(r.isError, true);
      assert.match(
        r.content[0]!.text!,
        /^timeout: the script ran longer than its 500 ms limit and was stopped hard/,
      );
      assert.ok(Date.now() - started < 10_000);
      // And the next script runs on a fresh worker.
      const after = await execute(client, `return "fine"`);
      assert.equal((after.structuredContent as { result: string }).result, 'fine');
      assert.ok(hub.alive());
    } finally {
      await client.close();
    }
  });
});

describe('limits at their defaults, on the real hub', () => {
  const MiB = 1024 * 1024;
  const cases: { name: string; code: string; timeout?: number; reason: RegExp }[] = [
    {
      name: 'wall time (timeout_ms)',
      code: 'task.sleep(5000)',
      timeout: 200,
      reason: /^timeout: the call ran longer than its 200 ms limit/,
    },
    {
      name: 'memory',
      code: `return #string.rep("x", ${100 * MiB})`,
      reason: /memory limit exceeded: the Lua state may use at most 64 MiB/,
    },
    {
      name: 'output',
      code: `local line = string.rep("y", 1023) for _ = 1, 1100 do print(line) end`,
      reason: /output limit exceeded: a script may print at most 1048576 bytes/,
    },
    {
      name: 'result size',
      code: `return string.rep("z", ${9 * MiB})`,
      reason:
        /^result limit exceeded: the returned value is \d+ bytes of JSON; the ceiling is 8388608/,
    },
  ];
  let client: Client;
  before(async () => {
    client = (await connectHttpClient(hub.url, 'legacy')).client;
  });
  after(() => client.close());

  for (const c of cases) {
    it(`${c.name}: refused with its named reason while the hub serves other calls`, async () => {
      const pending = execute(client, c.code, c.timeout);
      const echo = (await client.callTool({
        name: 'work.echo',
        arguments: { text: 'served' },
      })) as Result;
      assert.equal(echo.content[0]!.text, 'served');
      const r = await pending;
      assert.equal(r.isError, true, JSON.stringify(r).slice(0, 300));
      assert.match(r.content[0]!.text!, c.reason);
    });
  }

  it('calls and their concurrency: past 32 in flight and past 1000 in all are refused', async () => {
    const r = await execute(
      client,
      `local ids = {}
       for i = 1, 33 do ids[i] = mcp.call("work.slow", { n = i, ms = 300 }) end
       local res = task.await(ids)
       local started, refused = 32, nil
       while true do
         local one = task.await(mcp.call("work.echo", { text = "x" }))
         if one.is_error then refused = one.content break end
         started = started + 1
       end
       return { res[32].is_error, res[33].content, started, refused }`,
    );
    const [ok32, refused33, started, refused] = (r.structuredContent as { result: unknown[] })
      .result;
    assert.equal(ok32, false);
    assert.match(
      String(refused33),
      /^concurrency limit exceeded: at most 32 calls may run at once/,
    );
    assert.equal(started, 1000);
    assert.equal(refused, 'call limit exceeded: a script may start at most 1000 calls');
  });

  it('every mcp.call ceiling refuses before the tool runs, naming argument, size and ceiling', async () => {
    const r = await execute(
      client,
      `local function deep(n) local t = {} for _ = 1, n do t = { a = t } end return t end
       local keyed = {} for i = 1, 4097 do keyed["k" .. i] = i end
       local seq = {} for i = 1, 262145 do seq[i] = i end
       local out = {}
       for i, args in ipairs({
         { text = string.rep("a", 16 * 1024 * 1024 + 1) }, { text = "\\xc3" }, { m = keyed },
         { l = seq }, { d = deep(64) }, "{oops",
       }) do
         out[i] = task.await(mcp.call("work.echo", args)).content
       end
       return out`,
      60_000,
    );
    const reasons = (r.structuredContent as { result: string[] }).result;
    const expected = [
      /argument 'text' is a string of 16777217 bytes; the ceiling is 16777216 bytes/,
      /argument 'text' is a string of 1 bytes that is not UTF-8 text/,
      /argument 'm' is a table with 4097 keyed entries; the ceiling is 4096/,
      /argument 'l' is a table with 262145 sequence items; the ceiling is 262144/,
      /argument 'd(\.a){63}' is nested 65 tables deep; the ceiling is 64/,
      /args is a string of 5 bytes that is not JSON/,
    ];
    expected.forEach((re, i) => assert.match(reasons[i]!, re));
    assert.ok(hub.alive());
  });
});
