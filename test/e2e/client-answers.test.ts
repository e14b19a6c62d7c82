/**
 * A 2025 client's answers to the hub's server requests, spoken by hand over raw HTTP: an answer
 * that carries no result object (`"result": null`, a string, or `"error": null` alone) is the
 * client's error to the plugin, named as such, not an empty success the handler trips over.
 */
import { strict as assert } from 'node:assert';
import { after, before, describe, it } from 'node:test';
import { makeHubDir, type HubDir } from '../helpers/auth-hub.js';
import { initializeSession, rawRequest, sessionPost } from '../helpers/legacy-raw.js';
import { startMoonhub, type MoonhubProcess } from '../helpers/moonhub-process.js';

const PLUGIN = `
mcp.tool("ask", { description = "asks the user" }, function(_, context)
  local answer = context.elicit({ message = "Who are you?" })
  return "action: " .. tostring(answer.action)
end)
mcp.tool("sample", { description = "asks the client's model" }, function(_, context)
  local answer = context.sample({ prompt = "Say hi", max_tokens = 5 })
  return "text: " .. answer.content.text
end)
`;

describe("a 2025 client's malformed answer to a server request", () => {
  let dir: HubDir;
  let hub: MoonhubProcess;
  let sessionId: string;
  let nextId = 1;

  before(async () => {
    dir = makeHubDir({ p: PLUGIN });
    hub = await startMoonhub(['--plugins', dir.plugins, '--data', dir.data, '--no-watch']);
    const caps = { elicitation: {}, sampling: {} };
    sessionId = (await initializeSession(hub.url, undefined, caps)).sessionId;
  });
  after(async () => {
    await hub?.stop();
  });

  /** Calls `tool`, answers its one server request with `answer(id)`; the call's final text. */
  async function callAnswering(tool: string, answer: (id: unknown) => object): Promise<string> {
    const id = nextId++;
    const body = {
      jsonrpc: '2.0',
      id,
      method: 'tools/call',
      params: { name: tool, arguments: {} },
    };
    const res = await rawRequest(hub.url, { method: 'POST', sessionId, body });
    const asked = await res.waitFor(/data: (\{"jsonrpc":"2\.0","id":[^,]+,"method":[^\n]+)/, 5000);
    const request = JSON.parse(asked.slice('data: '.length)) as { id: unknown };
    const ack = await sessionPost(hub.url, undefined, sessionId, answer(request.id));
    assert.equal(ack.status, 202, ack.text);
    const line = await res.waitFor(new RegExp(`data: \\{"jsonrpc":"2\\.0","id":${id},[^\\n]+`));
    const msg = JSON.parse(line.slice('data: '.length)) as {
      result: { content: { text: string }[]; isError?: boolean };
    };
    return `${msg.result.isError === true ? 'error' : 'ok'}: ${msg.result.content[0]!.text}`;
  }

  it('names an answer without a result object as the client error it is', async () => {
    const cases: [string, (id: unknown) => object, RegExp][] = [
      ['ask', (id) => ({ jsonrpc: '2.0', id, result: null }), /\(result: null\)/],
      ['ask', (id) => ({ jsonrpc: '2.0', id, error: null }), /\(result: missing\)/],
      ['sample', (id) => ({ jsonrpc: '2.0', id, result: 'hi' }), /\(result: a string\)/],
      ['sample', (id) => ({ jsonrpc: '2.0', id, result: [1] }), /\(result: an array\)/],
    ];
    for (const [tool, answer, detail] of cases) {
      const text = await callAnswering(tool, answer);
      assert.match(text, /^error: .*the client answered with an error: its answer has no result/);
      assert.match(text, detail);
    }
  });

  it('still passes a well-formed answer and a client error through', async () => {
    const accept = (id: unknown) => ({ jsonrpc: '2.0', id, result: { action: 'decline' } });
    assert.equal(await callAnswering('ask', accept), 'ok: action: decline');
    const refuse = (id: unknown) => ({ jsonrpc: '2.0', id, error: { code: -1, message: 'no' } });
    assert.match(await callAnswering('ask', refuse), /^error: .*answered with an error: no$/);
    assert.ok(hub.alive());
  });
});

describe("a 2025-03-26 client's answer inside a JSON-RPC batch", () => {
  let dir: HubDir;
  let hub: MoonhubProcess;
  const V = { 'MCP-Protocol-Version': '2025-03-26' };

  before(async () => {
    dir = makeHubDir({ p: PLUGIN });
    hub = await startMoonhub(['--plugins', dir.plugins, '--data', dir.data, '--no-watch']);
  });
  after(async () => {
    await hub?.stop();
  });

  it('settles the server request it answers (2025-03-26 batches may carry responses)', async () => {
    const init = await rawRequest(hub.url, {
      method: 'POST',
      body: {
        jsonrpc: '2.0',
        id: 0,
        method: 'initialize',
        params: {
          protocolVersion: '2025-03-26',
          capabilities: { elicitation: {} },
          clientInfo: { name: 'batch-answers', version: '1' },
        },
      },
    });
    await init.done;
    const sessionId = init.sessionId!;
    const note = { jsonrpc: '2.0', method: 'notifications/initialized' };
    await (
      await rawRequest(hub.url, { method: 'POST', sessionId, body: note, headers: V })
    ).done;
    const body = { jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'ask' } };
    const res = await rawRequest(hub.url, { method: 'POST', sessionId, body, headers: V });
    const asked = await res.waitFor(/data: (\{"jsonrpc":"2\.0","id":[^,]+,"method":[^\n]+)/, 5000);
    const request = JSON.parse(asked.slice('data: '.length)) as { id: unknown };
    const answer = { jsonrpc: '2.0', id: request.id, result: { action: 'accept' } };
    const ack = await rawRequest(hub.url, {
      method: 'POST',
      sessionId,
      body: [answer, { jsonrpc: '2.0', method: 'notifications/progress', params: {} }],
      headers: V,
    });
    assert.equal(ack.status, 202, await ack.done);
    // Before, the batch's response was dropped and the call waited for its timeout (5 s).
    const line = await res.waitFor(/data: \{"jsonrpc":"2\.0","id":7,[^\n]+/, 2000);
    assert.match(line, /action: accept/);
  });
});
