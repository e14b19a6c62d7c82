/**
 * OAuth mode end to end: moonhub as a resource server for a real local issuer (keys made here,
 * JWKS served over HTTP). Good tokens map their agent claim to a view; every kind of bad token
 * gets 401 (or 403 for a missing scope) with a challenge that points at the RFC 9728 metadata,
 * and nothing of the hub's surface; the client's token never travels to the issuer.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startMoonhub, type MoonhubProcess } from '../helpers/moonhub-process.js';
import { connectWithToken, makeHubDir, rawPost, scopedPlugin } from '../helpers/auth-hub.js';
import {
  makeKey,
  signJwt,
  startIssuer,
  type Issuer,
  type SigningKey,
} from '../helpers/oauth-issuer.js';

const LIST = { method: 'tools/list', params: {} };

describe('OAuth resource server', () => {
  let issuer: Issuer;
  let hub: MoonhubProcess;
  let rsa: SigningKey;
  let ec: SigningKey;
  let ed: SigningKey;
  let impostor: SigningKey;
  let claims: (extra?: Record<string, unknown>) => Record<string, unknown>;

  before(async () => {
    rsa = makeKey('rsa-1', 'RS256');
    ec = makeKey('ec-1', 'ES256');
    ed = makeKey('ed-1', 'EdDSA');
    impostor = { ...makeKey('rsa-1', 'RS256') }; // same kid, another key
    issuer = await startIssuer([rsa, ec, ed]);
    const dir = makeHubDir({ secret: scopedPlugin('secret'), public: scopedPlugin('public') });
    const config = dir.write(
      'moonhub.json',
      JSON.stringify({
        hub_id: 'oauth-hub',
        plugins: { dirs: ['plugins'] },
        agents: {
          A: { plugins: ['secret'], builtins: [] },
          B: { plugins: ['public'], builtins: [] },
        },
        targets: { closed: { plugins: [] } },
        auth: {
          mode: 'oauth',
          oauth: {
            issuer: issuer.url,
            jwks_uri: issuer.jwksUri,
            scopes: ['mcp:tools'],
            agent_claim: 'agent',
            target_claim: 'target',
          },
        },
      }),
    );
    hub = await startMoonhub(['--config', config, '--data', dir.data]);
    const now = Math.floor(Date.now() / 1000);
    claims = (extra = {}) => ({
      iss: issuer.url,
      aud: hub.url,
      sub: 'user-1',
      agent: 'A',
      scope: 'openid mcp:tools',
      iat: now,
      exp: now + 600,
      ...extra,
    });
  });
  after(async () => {
    await hub.stop();
    await issuer.close();
  });

  const metadataUrl = () => new URL('/.well-known/oauth-protected-resource/mcp', hub.url).href;

  it('serves RFC 9728 metadata and points 401 challenges at it', async () => {
    const r = await rawPost(hub.url, LIST);
    assert.equal(r.status, 401);
    const challenge = r.headers.get('www-authenticate') ?? '';
    assert.match(challenge, /^Bearer /);
    assert.ok(challenge.includes(`resource_metadata="${metadataUrl()}"`), challenge);
    assert.ok(challenge.includes('scope="mcp:tools"'));
    const meta = await fetch(metadataUrl());
    assert.equal(meta.status, 200);
    assert.deepEqual(await meta.json(), {
      resource: hub.url,
      authorization_servers: [issuer.url],
      bearer_methods_supported: ['header'],
      resource_name: 'moonhub',
      scopes_supported: ['mcp:tools'],
    });
    assert.equal(
      (await fetch(new URL('/.well-known/oauth-protected-resource', hub.url))).status,
      200,
    );
  });

  it('maps a valid token to its agent: view and context (RS256, ES256, EdDSA; both eras)', async () => {
    const a = await connectWithToken(hub.url, 'modern', signJwt(claims(), rsa));
    const b = await connectWithToken(
      hub.url,
      'legacy',
      signJwt(claims({ sub: 'user-2', agent: 'B' }), ec),
    );
    const b2 = await connectWithToken(
      hub.url,
      'modern',
      signJwt(claims({ sub: 'user-3', agent: 'B' }), ed),
    );
    try {
      assert.deepEqual(
        (await a.client.listTools()).tools.map((t) => t.name),
        ['secret.echo'],
      );
      assert.deepEqual(
        (await b.client.listTools()).tools.map((t) => t.name),
        ['public.echo'],
      );
      assert.deepEqual(
        (await b2.client.listTools()).tools.map((t) => t.name),
        ['public.echo'],
      );
      const r = await a.client.callTool({ name: 'secret.echo', arguments: {} });
      const ctx = r.structuredContent as Record<string, unknown>;
      assert.equal(ctx.principal, 'oauth:user-1');
      assert.equal(ctx.agent_name, 'A');
      assert.equal(ctx.hub_id, 'oauth-hub');
      // A target claim applies its ceiling too.
      const closed = await rawPost(hub.url, LIST, {
        Authorization: `Bearer ${signJwt(claims({ sub: 'user-4', target: 'closed' }), rsa)}`,
      });
      assert.equal(closed.status, 200);
      assert.match(closed.text, /"tools":\[\]/);
    } finally {
      await Promise.all([a.client.close(), b.client.close(), b2.client.close()]);
    }
  });

  it('refuses every bad token with 401 invalid_token and leaks nothing', async () => {
    const now = Math.floor(Date.now() / 1000);
    const bad: Record<string, string> = {
      'wrong audience': signJwt(claims({ aud: 'http://127.0.0.1:1/mcp' }), rsa),
      'audience of another hub': signJwt(claims({ aud: [hub.url.replace('/mcp', '/other')] }), rsa),
      expired: signJwt(claims({ exp: now - 3600 }), rsa),
      'not yet valid': signJwt(claims({ nbf: now + 3600 }), rsa),
      'no expiry': signJwt(claims({ exp: undefined }), rsa),
      'other issuer': signJwt(claims({ iss: 'http://127.0.0.1:9/' }), rsa),
      'signed by another key': signJwt(claims(), impostor),
      'unknown kid': signJwt(claims(), { ...rsa, kid: 'nope' }),
      'alg none': `${Buffer.from('{"alg":"none"}').toString('base64url')}.${Buffer.from(JSON.stringify(claims())).toString('base64url')}.`,
      'HS256 with the public key as secret': signJwt(claims(), rsa, { alg: 'HS256' }),
      'RS256 header on an EC key': signJwt(claims(), ec, { alg: 'RS256' }),
      'no agent claim': signJwt(claims({ agent: undefined }), rsa),
      'no subject': signJwt(claims({ sub: undefined }), rsa),
      garbage: 'not.a.jwt',
      'a session token': `mhs_${'A'.repeat(16)}_${'b'.repeat(43)}`,
    };
    for (const [why, token] of Object.entries(bad)) {
      const r = await rawPost(hub.url, LIST, { Authorization: `Bearer ${token}` });
      assert.equal(r.status, 401, why);
      const challenge = r.headers.get('www-authenticate') ?? '';
      assert.match(challenge, /error="invalid_token"/, why);
      assert.ok(challenge.includes(`resource_metadata="${metadataUrl()}"`), why);
      assert.doesNotMatch(r.text, /secret|public|echo/, why);
    }
  });

  it('answers 403 insufficient_scope to a token without the required scope', async () => {
    const r = await rawPost(hub.url, LIST, {
      Authorization: `Bearer ${signJwt(claims({ scope: 'openid' }), rsa)}`,
    });
    assert.equal(r.status, 403);
    assert.match(
      r.headers.get('www-authenticate') ?? '',
      /error="insufficient_scope", scope="mcp:tools"/,
    );
    assert.doesNotMatch(r.text, /secret|public|echo/);
    const scp = await rawPost(hub.url, LIST, {
      Authorization: `Bearer ${signJwt(claims({ scope: undefined, scp: ['mcp:tools'] }), rsa)}`,
    });
    assert.equal(scp.status, 200);
  });

  it('binds a 2025 session to the token subject that opened it', async () => {
    const init = await rawPost(
      hub.url,
      {
        method: 'initialize',
        params: {
          protocolVersion: '2025-11-25',
          capabilities: {},
          clientInfo: { name: 'x', version: '1' },
        },
      },
      { Authorization: `Bearer ${signJwt(claims(), rsa)}` },
    );
    const sid = init.headers.get('mcp-session-id')!;
    const other = signJwt(claims({ sub: 'intruder', agent: 'A' }), rsa);
    const r = await rawPost(hub.url, LIST, {
      Authorization: `Bearer ${other}`,
      'mcp-session-id': sid,
      'mcp-protocol-version': '2025-11-25',
    });
    assert.equal(r.status, 404);
    const own = await rawPost(hub.url, LIST, {
      Authorization: `Bearer ${signJwt(claims(), ec)}`,
      'mcp-session-id': sid,
      'mcp-protocol-version': '2025-11-25',
    });
    assert.equal(own.status, 200);
  });

  it('never sends a client token to the issuer', () => {
    assert.ok(issuer.requests.length >= 1, 'the JWKS was fetched');
    for (const headers of issuer.requests) assert.equal(headers.authorization, undefined);
  });
});
