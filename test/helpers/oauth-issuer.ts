/**
 * A stand-in authorization server for the OAuth tests: real keys made with node:crypto, a JWKS
 * document served over real HTTP on 127.0.0.1, and JWTs signed the way an issuer signs them.
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { generateKeyPairSync, sign, type KeyObject } from 'node:crypto';

export interface SigningKey {
  kid: string;
  alg: 'RS256' | 'ES256' | 'PS256' | 'EdDSA';
  privateKey: KeyObject;
  publicKey: KeyObject;
}

export function makeKey(kid: string, alg: SigningKey['alg']): SigningKey {
  const pair =
    alg === 'ES256'
      ? generateKeyPairSync('ec', { namedCurve: 'P-256' })
      : alg === 'EdDSA'
        ? generateKeyPairSync('ed25519')
        : generateKeyPairSync('rsa', { modulusLength: 2048 });
  return { kid, alg, ...pair };
}

const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

export function signJwt(
  payload: Record<string, unknown>,
  key: SigningKey,
  header: Record<string, unknown> = {},
): string {
  const head = b64({ alg: key.alg, typ: 'at+jwt', kid: key.kid, ...header });
  const input = `${head}.${b64(payload)}`;
  const hash = key.alg === 'EdDSA' ? null : 'sha256';
  const sig = sign(
    hash,
    Buffer.from(input),
    key.alg === 'ES256'
      ? { key: key.privateKey, dsaEncoding: 'ieee-p1363' }
      : key.alg === 'PS256'
        ? { key: key.privateKey, padding: 6, saltLength: 32 }
        : key.privateKey,
  );
  return `${input}.${sig.toString('base64url')}`;
}

export interface Issuer {
  url: string;
  jwksUri: string;
  /** Headers of every request the issuer received (to prove no client token reached it). */
  requests: IncomingHttpHeaders[];
  close(): Promise<void>;
}

export async function startIssuer(keys: SigningKey[]): Promise<Issuer> {
  const requests: IncomingHttpHeaders[] = [];
  const server: Server = createServer((req, res) => {
    requests.push(req.headers);
    if (req.url !== '/jwks') {
      res.writeHead(404);
      res.end();
      return;
    }
    const doc = {
      keys: keys.map((k) => ({
        ...(k.publicKey.export({ format: 'jwk' }) as object),
        kid: k.kid,
        alg: k.alg,
        use: 'sig',
      })),
    };
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify(doc));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    jwksUri: `${url}/jwks`,
    requests,
    close: () =>
      new Promise<void>((r) => {
        server.close(() => r());
        server.closeAllConnections();
      }),
  };
}
