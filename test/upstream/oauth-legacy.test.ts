/**
 * The 2025-03-26 authorization fallback of the upstream OAuth client, against a real node:http
 * server playing an MCP server that answers 401: without protected resource metadata, metadata at
 * the server's origin naming a same-origin issuer (`/oauth`) is used (the hub goes on to register
 * there); a cross-origin issuer, or the same metadata behind protected resource metadata, is
 * still refused as an RFC 8414 §3.3 issuer mismatch and nothing is registered.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { UpstreamConnection } from '../../src/upstream/connection.js';

interface Fake {
  url: string;
  hits: string[];
  server: Server;
}

async function fakeLegacyServer(opts: { issuerPath: string; prm: boolean; foreign?: boolean }) {
  const hits: string[] = [];
  const server = createServer((req, res) => {
    const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const path = (req.url ?? '').split('?')[0]!;
    hits.push(`${req.method} ${path}`);
    const json = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (path === '/mcp') {
      res.writeHead(401, { 'www-authenticate': 'Bearer' });
      return res.end();
    }
    if (path.startsWith('/.well-known/oauth-protected-resource'))
      return opts.prm
        ? json(200, { resource: `${origin}/mcp`, authorization_servers: [`${origin}/`] })
        : json(404, {});
    if (path === '/.well-known/oauth-authorization-server') {
      const issuer = `${opts.foreign ? 'http://localhost:1' : origin}${opts.issuerPath}`;
      return json(200, {
        issuer,
        authorization_endpoint: `${origin}/oauth/authorize`,
        token_endpoint: `${origin}/oauth/token`,
        registration_endpoint: `${origin}/oauth/register`,
        response_types_supported: ['code'],
        code_challenge_methods_supported: ['S256'],
      });
    }
    if (path === '/oauth/register')
      return json(201, { client_id: 'c1', redirect_uris: ['http://127.0.0.1/cb'] });
    // A person would be needed (no redirect): the headless flow stops with a clear error.
    if (path === '/oauth/authorize') return json(400, { error: 'login_required' });
    json(404, {});
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
  return { url, hits, server } satisfies Fake;
}

async function connectError(fake: Fake): Promise<string> {
  const conn = new UpstreamConnection({
    url: fake.url,
    oauth: {},
    autoReconnect: false,
    connectTimeoutMs: 5000,
  });
  try {
    await conn.connect();
    return '';
  } catch (err) {
    return (err as Error).message;
  } finally {
    await conn.close();
  }
}

describe('upstream OAuth, 2025-03-26 fallback', () => {
  const servers: Server[] = [];
  after(() => servers.forEach((s) => s.close()));

  it('uses same-origin metadata when the resource has no protected resource metadata', async () => {
    const fake = await fakeLegacyServer({ issuerPath: '/oauth', prm: false });
    servers.push(fake.server);
    const message = await connectError(fake);
    assert.doesNotMatch(message, /Issuer mismatch/);
    assert.match(
      message,
      /wants a person to approve moonhub \(HTTP 400\); open http:\/\/127\.0\.0\.1:\d+\/oauth\/authorize/,
    );
    assert.ok(fake.hits.includes('POST /oauth/register'), fake.hits.join(', '));
    assert.ok(fake.hits.includes('GET /oauth/authorize'), fake.hits.join(', '));
  });

  it('refuses an issuer on another origin', async () => {
    const fake = await fakeLegacyServer({ issuerPath: '/oauth', prm: false, foreign: true });
    servers.push(fake.server);
    assert.match(await connectError(fake), /Issuer mismatch/);
    assert.ok(!fake.hits.includes('POST /oauth/register'), fake.hits.join(', '));
  });

  it('keeps the strict check when protected resource metadata names the authorization server', async () => {
    const fake = await fakeLegacyServer({ issuerPath: '/oauth', prm: true });
    servers.push(fake.server);
    assert.match(await connectError(fake), /Issuer mismatch/);
    assert.ok(!fake.hits.includes('POST /oauth/register'), fake.hits.join(', '));
  });
});
