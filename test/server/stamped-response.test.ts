/**
 * `responseHeaders` (the cluster modes' `X-Moonhub-Instance`): written with every head the
 * server sends, whatever way the head is written (the answer's flat header array, a header
 * object, `setHeader` then `writeHead`, the implicit head of `end()`, a refusal, a 202, an
 * operator route), exactly once, next to the headers the code set itself.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Registry } from '../../src/registry/registry.js';
import { startHttpServer, type HttpServerHandle } from '../../src/server/index.js';

const STAMP = 'X-Moonhub-Instance';

describe('headers on every response (responseHeaders)', () => {
  let server: HttpServerHandle;

  before(async () => {
    const registry = new Registry();
    registry.addTool('plug', {
      name: 'echo',
      description: 'echoes its text',
      inputSchema: { type: 'object' },
      handler: async (args) => ({
        content: [{ type: 'text' as const, text: String(args.text) }],
      }),
    });
    server = await startHttpServer(registry, {
      responseHeaders: { [STAMP]: 'inst-1' },
      routes: [
        // The implicit head: end() without writeHead.
        { path: '/implicit', public: true, handle: (_q, res) => void res.end('ok') },
        // setHeader, then writeHead with an object of its own.
        {
          path: '/mixed',
          public: true,
          handle: (_q, res) => {
            res.setHeader('X-Own', 'a');
            res.writeHead(201, { 'Content-Type': 'text/plain' });
            res.end('made');
          },
        },
        // An array of pairs.
        {
          path: '/pairs',
          public: true,
          handle: (_q, res) => {
            res.writeHead(200, 'Fine', [['X-Own', 'b']] as unknown as string[]);
            res.end();
          },
        },
      ],
    });
  });
  after(async () => server.close());

  const stampOf = (res: Response) => res.headers.get(STAMP);

  it('the JSON answer of a call (flat header array) carries it once', async () => {
    const res = await fetch(server.url, {
      method: 'POST',
      headers: {
        'Content-Type': 'application/json',
        Accept: 'application/json, text/event-stream',
        'MCP-Protocol-Version': '2026-07-28',
        'Mcp-Method': 'tools/call',
        'Mcp-Name': 'echo',
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: {
          name: 'echo',
          arguments: { text: 'hi' },
          _meta: {
            'io.modelcontextprotocol/protocolVersion': '2026-07-28',
            'io.modelcontextprotocol/clientCapabilities': {},
          },
        },
      }),
    });
    assert.equal(res.status, 200);
    assert.equal(stampOf(res), 'inst-1');
    assert.equal(res.headers.get('content-type'), 'application/json');
    const body = (await res.json()) as { result: { content: { text: string }[] } };
    assert.equal(body.result.content[0]!.text, 'hi');
  });

  it('refusals, 202 and operator routes carry it too', async () => {
    const wrongPath = await fetch(server.url.replace('/mcp', '/elsewhere'));
    assert.equal(wrongPath.status, 404);
    assert.equal(stampOf(wrongPath), 'inst-1');

    const badJson = await fetch(server.url, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'application/json' },
      body: '{not json',
    });
    assert.equal(badJson.status, 400);
    assert.equal(stampOf(badJson), 'inst-1');

    const implicit = await fetch(server.url.replace('/mcp', '/implicit'));
    assert.equal(await implicit.text(), 'ok');
    assert.equal(stampOf(implicit), 'inst-1');

    const mixed = await fetch(server.url.replace('/mcp', '/mixed'));
    assert.equal(mixed.status, 201);
    assert.equal(mixed.headers.get('x-own'), 'a');
    assert.equal(stampOf(mixed), 'inst-1');

    const pairs = await fetch(server.url.replace('/mcp', '/pairs'));
    assert.equal(pairs.status, 200);
    assert.equal(pairs.headers.get('x-own'), 'b');
    assert.equal(stampOf(pairs), 'inst-1');
  });
});
