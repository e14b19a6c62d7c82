/**
 * The OAuth issuer's JWKS endpoint as a hostile or broken server (a real local HTTP server):
 * - a body that does not end used to be read whole: 2 GB of keys took the hub from 170 MiB to
 *   3.9 GiB and held it, and the first request waited 12 s. Now the document is read up to
 *   auth.oauth.jwks_max_bytes (1 MiB) and the fetch fails with a log line naming the key;
 * - a server that never answers delays only the requests whose key is unknown, by at most
 *   auth.oauth.jwks_timeout_ms;
 * - keys past their age keep serving while the refetch hangs (before, every request waited on
 *   the refetch once the keys were 10 minutes old).
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, describe, it } from 'node:test';
import { JwksCache } from '../../src/auth/jwks.js';
import { startMoonhub, type MoonhubProcess } from '../helpers/moonhub-process.js';
import { makeHubDir, rawPost, scopedPlugin } from '../helpers/auth-hub.js';
import { makeKey, signJwt, type SigningKey } from '../helpers/oauth-issuer.js';
import { rssMiB } from './helpers.js';
import { sleep } from './limits-helpers.js';

type Mode = 'endless' | 'hang';

async function hostileIssuer(mode: Mode, key: SigningKey) {
  let requests = 0;
  const jwk = {
    ...(key.publicKey.export({ format: 'jwk' }) as object),
    kid: key.kid,
    alg: key.alg,
  };
  const server: Server = createServer((req, res) => {
    requests++;
    if (mode === 'hang') return;
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.write('{"keys":[' + JSON.stringify(jwk));
    // Bounded: 1 GiB at most, as fast as the hub reads it.
    const chunk = Buffer.from(',{"kty":"oct","k":"AAAA"}'.repeat(40_000));
    let sent = 0;
    const more = (): void => {
      while (sent < 1 << 30) {
        sent += chunk.length;
        if (!res.write(chunk)) {
          res.once('drain', more);
          return;
        }
      }
      res.end(']}');
    };
    res.on('error', () => {});
    more();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    requests: () => requests,
    close: () =>
      new Promise<void>((r) => {
        server.close(() => r());
        server.closeAllConnections();
      }),
  };
}

async function oauthHub(issuer: string, extra: Record<string, unknown> = {}) {
  const dir = makeHubDir({ p: scopedPlugin('p') });
  const config = dir.write(
    'moonhub.json',
    JSON.stringify({
      plugins: { dirs: ['plugins'] },
      agents: { A: { plugins: ['p'], builtins: [] } },
      auth: {
        mode: 'oauth',
        oauth: { issuer, jwks_uri: `${issuer}/jwks`, audience: 'hub', ...extra },
      },
    }),
  );
  return startMoonhub(['--config', config, '--data', dir.data, '--no-watch']);
}

const LIST = { method: 'tools/list', params: {} };

describe('a hostile JWKS endpoint', () => {
  const key = makeKey('k1', 'ES256');
  const token = (iss: string) =>
    signJwt(
      { iss, aud: 'hub', sub: 'u1', agent: 'A', exp: Math.floor(Date.now() / 1000) + 600 },
      key,
    );
  const closers: (() => Promise<unknown>)[] = [];
  after(async () => {
    for (const c of closers) await c();
  });

  it('an endless document is cut off at jwks_max_bytes: bounded RSS, a clear 401 and log line', async () => {
    const issuer = await hostileIssuer('endless', key);
    closers.push(issuer.close);
    const hub: MoonhubProcess = await oauthHub(issuer.url);
    closers.push(hub.stop);
    const pid = hub.child.pid!;
    const rss0 = rssMiB(pid);
    let peak = rss0;
    let done = false;
    const sampler = (async () => {
      while (!done) {
        peak = Math.max(peak, rssMiB(pid));
        await sleep(50);
      }
    })();
    const t0 = performance.now();
    const health = hub.url.replace(/\/mcp$/, '/healthz');
    const [r] = await Promise.all([
      rawPost(hub.url, LIST, { Authorization: `Bearer ${token(issuer.url)}` }),
      (async () => {
        await sleep(50);
        const h0 = performance.now();
        assert.equal((await fetch(health)).status, 200);
        assert.ok(performance.now() - h0 < 1000, '/healthz answered meanwhile');
      })(),
    ]);
    const took = performance.now() - t0;
    done = true;
    await sampler;
    assert.equal(r.status, 401);
    assert.match(r.headers.get('www-authenticate') ?? '', /invalid_token/);
    assert.ok(took < 3000, `answered in ${took.toFixed(0)} ms`);
    assert.ok(peak - rss0 < 100, `RSS went from ${rss0.toFixed(0)} to ${peak.toFixed(0)} MiB`);
    await hub.waitForLog(/over 1048576 bytes \(auth\.oauth\.jwks_max_bytes\)/);
  });

  it('a JWKS server that never answers delays a request by jwks_timeout_ms at most', async () => {
    const issuer = await hostileIssuer('hang', key);
    closers.push(issuer.close);
    const hub = await oauthHub(issuer.url, { jwks_timeout_ms: 500 });
    closers.push(hub.stop);
    const t0 = performance.now();
    const r = await rawPost(hub.url, LIST, { Authorization: `Bearer ${token(issuer.url)}` });
    const took = performance.now() - t0;
    assert.equal(r.status, 401);
    assert.ok(took < 2000, `answered in ${took.toFixed(0)} ms`);
    // Unknown keys do not refetch again within the refetch interval: no storm.
    await Promise.all(
      Array.from({ length: 50 }, () =>
        rawPost(hub.url, LIST, { Authorization: `Bearer ${token(issuer.url)}` }),
      ),
    );
    assert.equal(issuer.requests(), 1);
  });

  it('keys past their age keep serving while the refetch hangs', async () => {
    // The first answer is good, every later one hangs.
    let calls = 0;
    const jwk = { ...(key.publicKey.export({ format: 'jwk' }) as object), kid: 'k1', alg: 'ES256' };
    const server = createServer((_req, res) => {
      if (calls++ > 0) return;
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify({ keys: [jwk] }));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    closers.push(
      () =>
        new Promise<void>((r) => {
          server.close(() => r());
          server.closeAllConnections();
        }),
    );
    const uri = `http://127.0.0.1:${(server.address() as AddressInfo).port}/jwks`;
    const cache = new JwksCache(uri, { maxAgeMs: 100, timeoutMs: 2000 });
    const first = await cache.keyFor('k1', 'ES256');
    assert.ok(first !== undefined, 'the key was fetched');
    await sleep(200);
    const later = cache.keyFor('k1', 'ES256');
    assert.ok(!(later instanceof Promise), 'an aged key is used at once, not after the refetch');
    assert.equal(later, first);
    await sleep(100);
    assert.equal(calls, 2, 'the refetch was started in the background');
  });
});
