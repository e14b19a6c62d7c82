/**
 * The HTTP server's access hooks, in process with a real registry and raw HTTP: `authenticate`
 * (sync and async, refusals passed through untouched), the principal in the scope and the call
 * context (`filterFor` -> ctx.filter, `contextFor`), 2025 sessions bound to their creator's
 * principal, and `otherRoutes` in front of the MCP endpoint.
 */
import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { Registry } from '../../src/registry/registry.js';
import type { CallContext } from '../../src/registry/types.js';
import {
  startHttpServer,
  type AuthVerdict,
  type HttpServerHandle,
} from '../../src/server/index.js';
import { rawPost } from '../helpers/auth-hub.js';

describe('HTTP access hooks', () => {
  let server: HttpServerHandle;
  let seen: CallContext | undefined;

  before(async () => {
    const registry = new Registry({ hubId: 'hooks' });
    const tool = (name: string) => ({
      name,
      description: '',
      inputSchema: { type: 'object' },
      handler: async (_args: Record<string, unknown>, ctx: CallContext) => {
        seen = ctx;
        return { content: [{ type: 'text', text: 'ok' }] };
      },
    });
    registry.addTool('open', tool('open.t'));
    registry.addTool('closed', tool('closed.t'));
    const verdict = (req: IncomingMessage): AuthVerdict => {
      const who = req.headers['x-who'];
      if (who === 'p1' || who === 'p2') return { ok: true, principal: who as string };
      return {
        ok: false,
        status: 401,
        headers: { 'WWW-Authenticate': 'Bearer' },
        body: '{"no":1}',
      };
    };
    server = await startHttpServer(registry, {
      // The async path (as when keys must be fetched) for p2, the sync one for everyone else.
      authenticate: (req) =>
        req.headers['x-who'] === 'p2'
          ? new Promise((r) => setTimeout(() => r(verdict(req)), 10))
          : verdict(req),
      filterFor: (scope) => (scope.principal === 'p1' ? (o) => o === 'open' : undefined),
      contextFor: (scope, ctx) => {
        ctx.agent_name = `agent-of-${scope.principal}`;
      },
      otherRoutes: (req, res) => {
        if (req.url !== '/extra') return false;
        res.writeHead(200);
        res.end('extra');
        return true;
      },
    });
  });
  after(async () => server.close());

  it('sends a refusal exactly as the hook shaped it', async () => {
    const r = await rawPost(server.url, { method: 'tools/list' });
    assert.equal(r.status, 401);
    assert.equal(r.headers.get('www-authenticate'), 'Bearer');
    assert.equal(r.text, '{"no":1}');
  });

  it('puts the principal into the scope and the call context, sync and async', async () => {
    const p1 = await rawPost(server.url, { method: 'tools/list' }, { 'x-who': 'p1' });
    assert.match(p1.text, /open\.t/);
    assert.doesNotMatch(p1.text, /closed\.t/);
    const p2 = await rawPost(server.url, { method: 'tools/list' }, { 'x-who': 'p2' });
    assert.match(p2.text, /closed\.t/);
    await rawPost(
      server.url,
      { method: 'tools/call', params: { name: 'open.t', arguments: {} } },
      { 'x-who': 'p1' },
    );
    assert.equal(seen?.principal, 'p1');
    assert.equal(seen?.agent_name, 'agent-of-p1');
    assert.equal(seen?.filter?.('closed'), false, 'ctx.filter carries the view');
    await rawPost(
      server.url,
      { method: 'tools/call', params: { name: 'closed.t', arguments: {} } },
      { 'x-who': 'p2' },
    );
    assert.equal(seen?.principal, 'p2');
    assert.equal(seen?.filter, undefined);
  });

  it("answers 404 to another principal's 2025 session, on POST, GET and DELETE", async () => {
    const init = await rawPost(
      server.url,
      {
        method: 'initialize',
        params: {
          protocolVersion: '2025-06-18',
          capabilities: {},
          clientInfo: { name: 'x', version: '1' },
        },
      },
      { 'x-who': 'p1' },
    );
    const sid = init.headers.get('mcp-session-id')!;
    const as = (who: string) => ({ 'x-who': who, 'mcp-session-id': sid });
    assert.equal((await rawPost(server.url, { method: 'tools/list' }, as('p2'))).status, 404);
    const get = await fetch(server.url, { headers: { ...as('p2'), Accept: 'text/event-stream' } });
    assert.equal(get.status, 404);
    await get.body?.cancel();
    assert.equal((await fetch(server.url, { method: 'DELETE', headers: as('p2') })).status, 404);
    assert.equal((await rawPost(server.url, { method: 'tools/list' }, as('p1'))).status, 200);
  });

  it('lets otherRoutes answer beside the endpoint, and the rest falls through', async () => {
    const extra = await fetch(new URL('/extra', server.url));
    assert.equal(await extra.text(), 'extra');
    assert.equal((await fetch(new URL('/elsewhere', server.url))).status, 404);
  });
});
