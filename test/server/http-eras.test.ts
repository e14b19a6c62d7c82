/**
 * Both protocol eras over Streamable HTTP, driven by the official SDK v2 client against the JS
 * hub fixture in a child process: lists with pagination, calls, prompts, resources, errors and
 * list_changed delivery.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { connectHttpClient, waitFor, type Era } from '../helpers/mcp-client.js';
import { startHubProcess, type HubProcess } from '../helpers/hub-process.js';

let hub: HubProcess;
before(async () => {
  hub = await startHubProcess(['5']);
});
after(async () => {
  await hub.stop();
});

function errorCode(err: unknown): number | undefined {
  return (err as { code?: number }).code;
}

for (const era of ['legacy', 'modern'] as Era[]) {
  describe(`HTTP, ${era} era`, () => {
    it('negotiates the era and reports serverInfo and capabilities', async () => {
      const { client } = await connectHttpClient(hub.url, era);
      try {
        const version = client.getNegotiatedProtocolVersion?.() ?? undefined;
        if (version !== undefined)
          assert.equal(version, era === 'modern' ? '2026-07-28' : '2025-11-25');
        assert.equal(client.getServerVersion()?.name, 'moonhub');
        const caps = client.getServerCapabilities();
        assert.equal(caps?.tools?.listChanged, true);
        assert.equal(caps?.prompts?.listChanged, true);
        assert.equal(caps?.resources?.listChanged, true);
        assert.ok(caps?.completions);
      } finally {
        await client.close();
      }
    });

    it('lists tools page by page with opaque cursors', async () => {
      const { client } = await connectHttpClient(hub.url, era);
      try {
        const names: string[] = [];
        let cursor: string | undefined;
        let pages = 0;
        do {
          // client.listTools() follows cursors itself; request() shows the single pages.
          const page = (await client.request({
            method: 'tools/list',
            params: cursor === undefined ? {} : { cursor },
          })) as { tools: { name: string }[]; nextCursor?: string };
          assert.ok(page.tools.length <= 5, 'page size is 5');
          names.push(...page.tools.map((t) => t.name));
          cursor = page.nextCursor;
          pages++;
        } while (cursor !== undefined && pages < 20);
        assert.ok(pages >= 3, `expected several pages, got ${pages}`);
        for (const n of ['add', 'add_tool', 'bulk_00', 'bulk_06', 'echo', 'slow', 'whoami'])
          assert.ok(names.includes(n), n);
        assert.deepEqual([...names].sort(), names, 'sorted by name');
        assert.equal(new Set(names).size, names.length, 'no duplicates across pages');
        const aggregated = await client.listTools();
        assert.deepEqual(
          aggregated.tools.map((t) => t.name),
          names,
          'the SDK aggregates the same pages',
        );
        await assert.rejects(
          client.listTools({ cursor: 'not-a-cursor' }),
          (e) => errorCode(e) === -32602,
        );
      } finally {
        await client.close();
      }
    });

    it('calls tools, with context and argument errors', async () => {
      const { client } = await connectHttpClient(hub.url, era);
      try {
        const r = await client.callTool({ name: 'add', arguments: { a: 2, b: 40 } });
        assert.deepEqual(r.content, [{ type: 'text', text: '42' }]);
        assert.deepEqual(r.structuredContent, { sum: 42 });
        const who = await client.callTool({ name: 'whoami', arguments: {} });
        const ctx = JSON.parse((who.content as { text: string }[])[0]!.text) as Record<
          string,
          unknown
        >;
        assert.equal(ctx.hub_id, 'fixture-hub');
        if (era === 'legacy') assert.match(String(ctx.session_uuid), /^[0-9a-f]{32}$/);
        else assert.equal(ctx.session_uuid, null);
        assert.notEqual(ctx.request_id, undefined);
        const bad = await client.callTool({ name: 'add', arguments: { a: 'x' } });
        assert.equal(bad.isError, true);
        await assert.rejects(
          client.callTool({ name: 'nope', arguments: {} }),
          (e: Error) => errorCode(e) === -32602 && /Unknown tool: nope/.test(e.message),
        );
      } finally {
        await client.close();
      }
    });

    it('gets prompts and reads fixed and templated resources', async () => {
      const { client } = await connectHttpClient(hub.url, era);
      try {
        const prompts = await client.listPrompts();
        assert.ok(prompts.prompts.some((p) => p.name === 'greet'));
        const p = await client.getPrompt({ name: 'greet', arguments: { name: 'Ada' } });
        assert.deepEqual(p.messages[0]!.content, { type: 'text', text: 'Hello, Ada!' });
        await assert.rejects(
          client.getPrompt({ name: 'missing', arguments: {} }),
          (e) => errorCode(e) === -32602,
        );
        await assert.rejects(
          client.getPrompt({ name: 'greet', arguments: {} }),
          (e) => errorCode(e) === -32602,
        );

        const resources = await client.listResources();
        assert.ok(resources.resources.some((r) => r.uri === 'mem://readme'));
        const templates = await client.listResourceTemplates();
        assert.deepEqual(
          templates.resourceTemplates.map((t) => t.uriTemplate),
          ['note://{id}'],
        );
        const fixed = await client.readResource({ uri: 'mem://readme' });
        assert.equal((fixed.contents[0] as { text: string }).text, 'read me');
        const note = await client.readResource({ uri: 'note://42' });
        assert.equal((note.contents[0] as { text: string }).text, 'note 42');
        await assert.rejects(
          client.readResource({ uri: 'mem://nothing' }),
          // The SDK folds the wire's -32002 (2025) into ResourceNotFoundError (-32602); the raw
          // codes are checked in http-raw.test.
          (e: Error) =>
            errorCode(e) === -32602 && /Resource not found: mem:\/\/nothing/.test(e.message),
        );
      } finally {
        await client.close();
      }
    });

    it('delivers list_changed after the registry changes', async () => {
      const { client, events } = await connectHttpClient(hub.url, era);
      try {
        // Give the GET stream / listen subscription a moment to be established server-side.
        await new Promise((r) => setTimeout(r, 200));
        const before = { ...events };
        const r = await client.callTool({ name: 'add_tool', arguments: {} });
        const added = (r.content as { text: string }[])[0]!.text.replace('added ', '');
        await waitFor(
          () =>
            events.tools > before.tools &&
            events.prompts > before.prompts &&
            events.resources > before.resources,
          5000,
          'list_changed notifications',
        );
        const all: string[] = [];
        let cursor: string | undefined;
        do {
          const page = await client.listTools(cursor === undefined ? {} : { cursor });
          all.push(...page.tools.map((t) => t.name));
          cursor = page.nextCursor;
        } while (cursor);
        assert.ok(all.includes(added), `${added} is listed`);
      } finally {
        await client.close();
      }
    });
  });
}

describe('HTTP sessions (2025 era)', () => {
  it('ends a session on DELETE; the id is then unknown (404)', async () => {
    const { client, transport } = await connectHttpClient(hub.url, 'legacy');
    const sid = transport.sessionId;
    assert.ok(sid);
    await client.listTools();
    await transport.terminateSession();
    await client.close();
    const res = await fetch(hub.url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-session-id': sid,
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    assert.equal(res.status, 404);
    assert.equal(((await res.json()) as { error: { code: number } }).error.code, -32001);
  });

  it('requires the session id after initialize (400) and checks MCP-Protocol-Version', async () => {
    const res = await fetch(hub.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    assert.equal(res.status, 400);
    const { transport, client } = await connectHttpClient(hub.url, 'legacy');
    try {
      const bad = await fetch(hub.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json',
          'mcp-session-id': transport.sessionId!,
          'mcp-protocol-version': '1999-01-01',
        },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
      });
      assert.equal(bad.status, 400);
    } finally {
      await client.close();
    }
  });

  it('answers the client version when supported, else the latest', async () => {
    const init = async (protocolVersion: string) => {
      const res = await fetch(hub.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
        },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'initialize',
          params: { protocolVersion, capabilities: {}, clientInfo: { name: 'raw', version: '0' } },
        }),
      });
      assert.equal(res.status, 200);
      assert.match(res.headers.get('mcp-session-id') ?? '', /^[0-9a-f]{32}$/);
      return ((await res.json()) as { result: { protocolVersion: string } }).result.protocolVersion;
    };
    assert.equal(await init('2025-03-26'), '2025-03-26');
    assert.equal(await init('2025-06-18'), '2025-06-18');
    assert.equal(await init('2019-01-01'), '2025-11-25');
  });

  it('opens one GET stream per session; GET without a session is 405', async () => {
    const noSession = await fetch(hub.url, { headers: { accept: 'text/event-stream' } });
    assert.equal(noSession.status, 405);
    const unknown = await fetch(hub.url, {
      headers: { accept: 'text/event-stream', 'mcp-session-id': 'f'.repeat(32) },
    });
    assert.equal(unknown.status, 404);
  });
});
