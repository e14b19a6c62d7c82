/**
 * The server's seams, over real HTTP on 127.0.0.1: the call observer sees every inbound call
 * (dispatched or refused) with its facts and outcome; extra routes answer before the MCP
 * endpoint, behind the Host/Origin guard unless public; a session layer passed in is the one the
 * transport uses.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Registry } from '../../src/registry/registry.js';
import {
  LegacySessionStore,
  startHttpServer,
  type HttpServerHandle,
  type ObservedCall,
} from '../../src/server/index.js';

const ENVELOPE = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientCapabilities': {},
};

describe('server seams', () => {
  let server: HttpServerHandle;
  const ended: ObservedCall[] = [];
  let started = 0;
  let created = 0;

  before(async () => {
    const registry = new Registry();
    registry.addTool('plug', {
      name: 'echo',
      description: 'echoes its arguments',
      inputSchema: { type: 'object' },
      handler: async (args) => ({
        content: [{ type: 'text' as const, text: JSON.stringify(args) }],
      }),
    });
    const sessions = new LegacySessionStore();
    const create = sessions.create.bind(sessions);
    sessions.create = (principal) => {
      created++;
      return create(principal);
    };
    server = await startHttpServer(registry, {
      sessions,
      observer: { started: () => void started++, ended: (c) => void ended.push(c) },
      routes: [{ path: '/healthz', public: true, handle: (_q, res) => void res.end('ok') }],
    });
    server.addRoute({ path: '/private', handle: (_q, res) => void res.end('secret') });
  });
  after(async () => server.close());

  const post = (body: unknown, headers: Record<string, string> = {}) =>
    fetch(server.url, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'application/json', ...headers },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });
  const modern = (method: string, params: Record<string, unknown>, name?: string) =>
    post(
      { jsonrpc: '2.0', id: 7, method, params: { ...params, _meta: ENVELOPE } },
      {
        'MCP-Protocol-Version': '2026-07-28',
        'Mcp-Method': method,
        ...(name === undefined ? {} : { 'Mcp-Name': name }),
      },
    );

  it('observes a call, an error and a refusal, with their facts', async () => {
    ended.length = 0;
    const before = started;
    await (await modern('tools/call', { name: 'echo', arguments: { a: 1 } }, 'echo')).text();
    await (await modern('tools/call', { name: 'nope', arguments: {} }, 'nope')).text();
    const refused = await post('[]');
    assert.equal(refused.status, 400);
    await refused.text();
    assert.equal(started - before, 3);
    const [ok, unknown, batch] = ended;
    assert.equal(ok!.era, 'modern');
    assert.equal(ok!.transport, 'http');
    assert.equal(ok!.method, 'tools/call');
    assert.equal(ok!.name, 'echo');
    assert.equal(ok!.owner, 'plug');
    assert.equal(ok!.argumentBytes, Buffer.byteLength('{"a":1}'));
    assert.equal(ok!.outcome, 'ok');
    assert.ok(ok!.durationMs >= 0);
    assert.equal(unknown!.outcome, 'error');
    assert.equal(unknown!.errorCode, -32602);
    assert.equal(unknown!.owner, undefined);
    assert.equal(batch!.outcome, 'rejected');
    assert.equal(batch!.method, '(batch)');
    assert.equal(batch!.errorCode, -32600);
  });

  it('answers plugged-in routes before the endpoint, guarded unless public', async () => {
    const health = await fetch(new URL('/healthz', server.url), {
      headers: { Origin: 'https://evil.example' },
    });
    assert.equal(await health.text(), 'ok');
    const hidden = await fetch(new URL('/private', server.url), {
      headers: { Origin: 'https://evil.example' },
    });
    assert.equal(hidden.status, 403);
    assert.match(await hidden.text(), /origin not allowed/);
    const wrongMethod = await fetch(new URL('/private', server.url), { method: 'POST' });
    assert.equal(wrongMethod.status, 405);
    await wrongMethod.text();
    assert.equal(await (await fetch(new URL('/private', server.url))).text(), 'secret');
    // The endpoint itself is untouched by the routes.
    const r = await modern('tools/list', {});
    assert.equal(r.status, 200);
    assert.match(await r.text(), /"name":"echo"/);
  });

  it('makes 2025 sessions through the session layer it was given', async () => {
    const before = created;
    const r = await post({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: {
        protocolVersion: '2025-11-25',
        capabilities: {},
        clientInfo: { name: 't', version: '1' },
      },
    });
    await r.text();
    assert.ok(r.headers.get('mcp-session-id'));
    assert.equal(created - before, 1);
    assert.equal(server.handler.sessions.size, 1);
  });
});
