/**
 * The Lua context functions end to end: a real moonhub process serving a plugin written for
 * this test, driven by the SDK v2 client over HTTP in both protocol eras. Progress, log,
 * elicitation, sampling, several questions at once, completions, resource subscriptions and
 * required client capabilities, plus misuse from Lua (progress going backwards, eliciting from a
 * client that cannot answer, a context used after its call ended): a clear error, and the call
 * still finishes.
 */
import { strict as assert } from 'node:assert';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { startMoonhub, type MoonhubProcess } from '../helpers/moonhub-process.js';
import { openListen } from '../helpers/listen-raw.js';

const PLUGIN = String.raw`
mcp.tool("steps", { description = "reports progress" }, function(_, context)
  local sent = context.progress(1, 3, "one")
  context.progress(2, 3)
  context.progress(3, 3, "three")
  return { sent = sent }
end)

mcp.tool("backwards", { description = "progress going backwards" }, function(params, context)
  context.progress(5)
  if params.catch then
    local ok, err = pcall(context.progress, 3)
    return { ok = ok, err = err }
  end
  context.progress(3)
  return "not reached"
end)

mcp.tool("logs", { description = "logs at three levels" }, function(_, context)
  context.log("debug", "a debug line")
  context.log("info", { step = "info" })
  context.log("error", "an error line", "my-logger")
  return "logged"
end)

mcp.tool("bad_log", { description = "logs at a level that does not exist" }, function(_, context)
  context.log("loud", "x")
end)

mcp.tool("ask", { description = "asks the user" }, function(params, context)
  local answer = context.elicit({
    key = "who",
    message = "Who are you?",
    requested_schema = { type = "object", properties = { name = { type = "string" } } },
  })
  return { action = answer.action, name = answer.content and answer.content.name }
end)

mcp.tool("ask_caught", { description = "asks, catching a refusal" }, function(_, context)
  local ok, err = pcall(context.elicit, { message = "Who are you?" })
  return { ok = ok, err = err }
end)

mcp.tool("sample", { description = "asks the client's model" }, function(_, context)
  local answer = context.sample({ prompt = "Say hi", max_tokens = 20 })
  return { text = answer.content.text, model = answer.model }
end)

mcp.tool("both", { description = "asks two questions at once" }, function(_, context)
  local a = context.input({
    q1 = { method = "elicitation/create", params = { message = "First?", requestedSchema = { type = "object", properties = {} } } },
    q2 = { method = "sampling/createMessage", params = { messages = { { role = "user", content = { type = "text", text = "Second?" } } }, maxTokens = 5 } },
  })
  return { first = a.q1.action, second = a.q2.content.text }
end)

mcp.tool("roots", { description = "lists the client's roots" }, function(_, context)
  local r = context.list_roots()
  return { count = #r.roots, first = r.roots[1] and r.roots[1].uri }
end)

mcp.tool("caps", { description = "shows the client's capabilities" }, function(_, context)
  local c = context.client_capabilities
  return { sampling = c.sampling ~= nil, elicitation = c.elicitation ~= nil }
end)

local saved
mcp.tool("keep", { description = "keeps its context" }, function(_, context)
  saved = context
  return "kept"
end)
mcp.tool("use_kept", { description = "uses a context whose call ended" }, function()
  local ok, err = pcall(saved.progress, 1)
  return { ok = ok, err = err }
end)

mcp.tool("needs_sampling", { description = "needs sampling", requires = { "sampling" } }, function()
  return "ran"
end)

mcp.resource("demo://watched", { name = "watched", mime_type = "text/plain" }, function()
  return "content"
end)
mcp.tool("touch", { description = "tells subscribers the resource changed" }, function()
  mcp.resource_updated("demo://watched")
  return "touched"
end)

mcp.prompt("city", {
  description = "a prompt with a completed argument",
  arguments = {
    { name = "name", required = true, complete = function(value, args, context)
        local out = {}
        for _, c in ipairs({ "paris", "park", "prague" }) do
          if c:sub(1, #value) == value then out[#out + 1] = c end
        end
        return out
      end },
  },
}, function(args) return "visit " .. args.name end)
`;

type Era = 'legacy' | 'modern';

interface Options {
  era: Era;
  capabilities?: Record<string, object>;
  elicit?: (params: Record<string, unknown>) => Record<string, unknown>;
}

async function connect(
  url: string,
  opts: Options,
): Promise<{ client: Client; notes: { method: string; params: unknown }[] }> {
  const notes: { method: string; params: unknown }[] = [];
  const client = new Client(
    { name: 'context-test', version: '1.0.0' },
    {
      capabilities: opts.capabilities ?? {},
      versionNegotiation: { mode: opts.era === 'modern' ? { pin: '2026-07-28' } : 'legacy' },
    },
  );
  if (opts.capabilities?.elicitation) {
    client.setRequestHandler('elicitation/create', async (req) => {
      const params = req.params as unknown as Record<string, unknown>;
      return (opts.elicit?.(params) ?? {
        action: 'accept',
        content: { name: 'Ada' },
      }) as never;
    });
  }
  if (opts.capabilities?.roots) {
    client.setRequestHandler(
      'roots/list',
      async () => ({ roots: [{ uri: 'file:///work', name: 'work' }] }) as never,
    );
  }
  if (opts.capabilities?.sampling) {
    client.setRequestHandler(
      'sampling/createMessage',
      async () =>
        ({
          role: 'assistant',
          content: { type: 'text', text: 'hi there' },
          model: 'test-model',
        }) as never,
    );
  }
  client.setNotificationHandler('notifications/message', (n) => {
    notes.push({ method: n.method, params: n.params });
  });
  client.setNotificationHandler('notifications/resources/updated', (n) => {
    notes.push({ method: n.method, params: n.params });
  });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  return { client, notes };
}

function structured(result: unknown): Record<string, unknown> {
  const r = result as { structuredContent?: Record<string, unknown>; isError?: boolean };
  assert.equal(r.isError, undefined, JSON.stringify(result));
  return r.structuredContent!;
}

function errorText(result: unknown): string {
  const r = result as { isError?: boolean; content: { text: string }[] };
  assert.equal(r.isError, true, JSON.stringify(result));
  return r.content.map((c) => c.text).join('\n');
}

let hub: MoonhubProcess;

before(async () => {
  const dir = mkdtempSync(join(tmpdir(), 'moonhub-context-'));
  writeFileSync(join(dir, 'ctx.lua'), PLUGIN);
  hub = await startMoonhub(['--plugins', dir, '--no-watch']);
});

after(async () => {
  await hub.stop();
});

for (const era of ['legacy', 'modern'] as const) {
  describe(`context functions (${era === 'legacy' ? '2025-11-25' : '2026-07-28'})`, () => {
    test('context.progress sends notifications with the request token, in order', async () => {
      const { client } = await connect(hub.url, { era });
      const seen: { progress: number; total?: number; message?: string }[] = [];
      const result = await client.callTool(
        { name: 'steps', arguments: {} },
        { onprogress: (p) => seen.push(p) },
      );
      assert.deepEqual(structured(result), { sent: true });
      assert.deepEqual(
        seen.map((p) => [p.progress, p.total, p.message]),
        [
          [1, 3, 'one'],
          [2, 3, undefined],
          [3, 3, 'three'],
        ],
      );
      // Without a progress token nothing is sent and progress() says so.
      assert.deepEqual(structured(await client.callTool({ name: 'steps', arguments: {} })), {
        sent: false,
      });
      await client.close();
    });

    test('progress going backwards is a clear Lua error, and the call still finishes', async () => {
      const { client } = await connect(hub.url, { era });
      const caught = structured(
        await client.callTool({ name: 'backwards', arguments: { catch: true } }),
      );
      assert.equal(caught.ok, false);
      assert.match(
        String(caught.err),
        /context\.progress: progress must not go backwards \(3 after 5\)/,
      );
      const uncaught = errorText(await client.callTool({ name: 'backwards', arguments: {} }));
      // The error points at the plugin's line, not at the hub's glue.
      assert.match(uncaught, /ctx\.lua:\d+: context\.progress: progress must not go backwards/);
      // The hub is fine afterwards.
      assert.deepEqual(structured(await client.callTool({ name: 'steps', arguments: {} })), {
        sent: false,
      });
      await client.close();
    });

    test('context.elicit waits for the user and returns the answer', async () => {
      const { client } = await connect(hub.url, {
        era,
        capabilities: { elicitation: {} },
        elicit: (params) => {
          assert.equal(params.message, 'Who are you?');
          return { action: 'accept', content: { name: 'Grace' } };
        },
      });
      assert.deepEqual(structured(await client.callTool({ name: 'ask', arguments: {} })), {
        action: 'accept',
        name: 'Grace',
      });
      await client.close();
    });

    test('eliciting from a client without the capability is a clear error; the call finishes', async () => {
      const { client } = await connect(hub.url, { era });
      const text = errorText(await client.callTool({ name: 'ask', arguments: {} }));
      assert.match(
        text,
        /context\.elicit: the client did not declare the 'elicitation' capability/,
      );
      const caught = structured(await client.callTool({ name: 'ask_caught', arguments: {} }));
      assert.equal(caught.ok, false);
      assert.match(String(caught.err), /'elicitation' capability/);
      await client.close();
    });

    test('context.sample and context.input reach the client and return its answers', async () => {
      const { client } = await connect(hub.url, {
        era,
        capabilities: { sampling: {}, elicitation: {} },
      });
      assert.deepEqual(structured(await client.callTool({ name: 'sample', arguments: {} })), {
        text: 'hi there',
        model: 'test-model',
      });
      assert.deepEqual(structured(await client.callTool({ name: 'both', arguments: {} })), {
        first: 'accept',
        second: 'hi there',
      });
      assert.deepEqual(structured(await client.callTool({ name: 'caps', arguments: {} })), {
        sampling: true,
        elicitation: true,
      });
      await client.close();
    });

    test('context.list_roots returns the client roots; without the capability a clear error', async () => {
      const { client } = await connect(hub.url, { era, capabilities: { roots: {} } });
      assert.deepEqual(structured(await client.callTool({ name: 'roots', arguments: {} })), {
        count: 1,
        first: 'file:///work',
      });
      await client.close();
      const plain = await connect(hub.url, { era });
      assert.match(
        errorText(await plain.client.callTool({ name: 'roots', arguments: {} })),
        /context\.list_roots: the client did not declare the 'roots' capability/,
      );
      await plain.client.close();
    });

    test('a context used after its call ended raises a clear error', async () => {
      const { client } = await connect(hub.url, { era });
      await client.callTool({ name: 'keep', arguments: {} });
      const r = structured(await client.callTool({ name: 'use_kept', arguments: {} }));
      assert.equal(r.ok, false);
      assert.match(String(r.err), /the call this context belongs to has already ended/);
      await client.close();
    });

    test('complete handlers answer completion/complete', async () => {
      const { client } = await connect(hub.url, { era });
      const r = await client.complete({
        ref: { type: 'ref/prompt', name: 'city' },
        argument: { name: 'name', value: 'pa' },
      });
      assert.deepEqual(r.completion.values, ['paris', 'park']);
      await client.close();
    });
  });
}

describe('2025-11-25 only', () => {
  test('context.log honours logging/setLevel; a bad level is a clear error', async () => {
    const { client, notes } = await connect(hub.url, { era: 'legacy' });
    await client.setLoggingLevel('info');
    await client.callTool({ name: 'logs', arguments: {} });
    const logs = notes.filter((n) => n.method === 'notifications/message').map((n) => n.params);
    assert.deepEqual(logs, [
      { level: 'info', data: { step: 'info' } },
      { level: 'error', data: 'an error line', logger: 'my-logger' },
    ]);
    assert.match(
      errorText(await client.callTool({ name: 'bad_log', arguments: {} })),
      /bad argument #1 to 'log' \(a log level expected/,
    );
    await client.close();
  });

  test('mcp.resource_updated notifies the sessions that subscribed', async () => {
    const { client, notes } = await connect(hub.url, { era: 'legacy' });
    const other = await connect(hub.url, { era: 'legacy' });
    await client.subscribeResource({ uri: 'demo://watched' });
    await client.callTool({ name: 'touch', arguments: {} });
    const start = Date.now();
    while (!notes.some((n) => n.method === 'notifications/resources/updated')) {
      assert.ok(Date.now() - start < 5000, 'no notifications/resources/updated arrived');
      await new Promise((r) => setTimeout(r, 20));
    }
    assert.deepEqual(notes.find((n) => n.method === 'notifications/resources/updated')!.params, {
      uri: 'demo://watched',
    });
    await client.unsubscribeResource({ uri: 'demo://watched' });
    assert.equal(other.notes.length, 0);
    await other.client.close();
    await client.close();
  });

  test('a tool that requires sampling is refused as a tool error without it', async () => {
    const { client } = await connect(hub.url, { era: 'legacy' });
    assert.match(
      errorText(await client.callTool({ name: 'needs_sampling', arguments: {} })),
      /Missing required client capability: sampling/,
    );
    await client.close();
    const ok = await connect(hub.url, { era: 'legacy', capabilities: { sampling: {} } });
    const r = (await ok.client.callTool({ name: 'needs_sampling', arguments: {} })) as {
      content: { text: string }[];
    };
    assert.equal(r.content[0]!.text, 'ran');
    await ok.client.close();
  });
});

describe('2026-07-28 only (raw HTTP)', () => {
  const meta = (caps: Record<string, unknown> = {}, extra: Record<string, unknown> = {}) => ({
    'io.modelcontextprotocol/protocolVersion': '2026-07-28',
    'io.modelcontextprotocol/clientCapabilities': caps,
    ...extra,
  });
  const post = async (name: string, params: Record<string, unknown>) => {
    const res = await fetch(hub.url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': '2026-07-28',
        'mcp-method': 'tools/call',
        'mcp-name': name,
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name, ...params },
      }),
    });
    return { status: res.status, type: res.headers.get('content-type'), text: await res.text() };
  };

  test('elicitation becomes input_required; the retry with the answer completes', async () => {
    const r1 = await post('ask', { arguments: {}, _meta: meta({ elicitation: {} }) });
    const first = JSON.parse(r1.text).result;
    assert.equal(first.resultType, 'input_required');
    assert.equal(first.inputRequests.who.method, 'elicitation/create');
    assert.equal(typeof first.requestState, 'string');
    const r2 = await post('ask', {
      arguments: {},
      _meta: meta({ elicitation: {} }),
      inputResponses: { who: { action: 'accept', content: { name: 'Lin' } } },
      requestState: first.requestState,
    });
    const second = JSON.parse(r2.text).result;
    assert.equal(second.resultType, 'complete');
    assert.deepEqual(second.structuredContent, { action: 'accept', name: 'Lin' });
    // A tampered state is refused.
    const r3 = await post('ask', {
      arguments: {},
      _meta: meta({ elicitation: {} }),
      inputResponses: { who: { action: 'accept', content: { name: 'Lin' } } },
      requestState: first.requestState + 'x',
    });
    assert.equal(JSON.parse(r3.text).error.code, -32602);
  });

  test('subscriptions/listen with resourceSubscriptions hears mcp.resource_updated', async () => {
    const listen = await openListen(
      hub.url,
      'sub-1',
      { resourceSubscriptions: ['demo://watched'] },
      { meta: meta() },
    );
    const readUntil = (re: RegExp) => listen.readUntil(re);
    await readUntil(/subscriptions\/acknowledged/);
    assert.match(listen.text(), /"resourceSubscriptions":\["demo:\/\/watched"\]/);
    await post('touch', { arguments: {}, _meta: meta() });
    await readUntil(/notifications\/resources\/updated/);
    assert.match(listen.text(), /"uri":"demo:\/\/watched"/);
    assert.match(listen.text(), /"io.modelcontextprotocol\/subscriptionId":"sub-1"/);
    await listen.close();
  });

  test('logs only when the request names a level; a missing capability is -32021 / 400', async () => {
    const quiet = await post('logs', { arguments: {}, _meta: meta() });
    assert.doesNotMatch(quiet.text, /notifications\/message/);
    const loud = await post('logs', {
      arguments: {},
      _meta: meta({}, { 'io.modelcontextprotocol/logLevel': 'error' }),
    });
    assert.match(loud.type ?? '', /text\/event-stream/);
    assert.match(loud.text, /an error line/);
    assert.doesNotMatch(loud.text, /a debug line/);
    const refused = await post('needs_sampling', { arguments: {}, _meta: meta() });
    assert.equal(refused.status, 400);
    const body = JSON.parse(refused.text);
    assert.equal(body.error.code, -32021);
    assert.deepEqual(body.error.data, { requiredCapabilities: { sampling: {} } });
  });
});
