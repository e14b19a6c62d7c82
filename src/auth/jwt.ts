/**
 * JWT access tokens (RFC 7519/9068), checked with node:crypto alone: the compact form, the
 * signature (RS*, PS*, ES*, EdDSA; never `none` or HMAC, whose key a resource server would have
 * to share), and the registered claims. Errors say what is wrong with the token, nothing more.
 */
import { constants, verify, type KeyObject } from 'node:crypto';

export class JwtError extends Error {}

export interface DecodedJwt {
  header: Record<string, unknown>;
  payload: Record<string, unknown>;
  signingInput: Buffer;
  signature: Buffer;
}

const B64URL = /^[A-Za-z0-9_-]*$/;

function part(text: string, what: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
  } catch {
    throw new JwtError(`the token's ${what} is not JSON`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new JwtError(`the token's ${what} is not a JSON object`);
  return value as Record<string, unknown>;
}

export function decodeJwt(token: string): DecodedJwt {
  const parts = token.split('.');
  if (parts.length !== 3 || !parts.every((p) => B64URL.test(p)))
    throw new JwtError('the token is not a JWT');
  return {
    header: part(parts[0]!, 'header'),
    payload: part(parts[1]!, 'payload'),
    signingInput: Buffer.from(`${parts[0]}.${parts[1]}`),
    signature: Buffer.from(parts[2]!, 'base64url'),
  };
}

interface Algorithm {
  hash: string | null;
  keyType: string;
  curve?: string;
  pss?: boolean;
  ecdsa?: boolean;
}

export const ALGORITHMS: Readonly<Record<string, Algorithm>> = {
  RS256: { hash: 'sha256', keyType: 'rsa' },
  RS384: { hash: 'sha384', keyType: 'rsa' },
  RS512: { hash: 'sha512', keyType: 'rsa' },
  PS256: { hash: 'sha256', keyType: 'rsa', pss: true },
  PS384: { hash: 'sha384', keyType: 'rsa', pss: true },
  PS512: { hash: 'sha512', keyType: 'rsa', pss: true },
  ES256: { hash: 'sha256', keyType: 'ec', curve: 'prime256v1', ecdsa: true },
  ES384: { hash: 'sha384', keyType: 'ec', curve: 'secp384r1', ecdsa: true },
  ES512: { hash: 'sha512', keyType: 'ec', curve: 'secp521r1', ecdsa: true },
  EdDSA: { hash: null, keyType: 'ed25519' },
};

/** Whether `key` signed the token with `alg`; a key of the wrong type never verifies. */
export function signatureValid(jwt: DecodedJwt, alg: string, key: KeyObject): boolean {
  const a = Object.hasOwn(ALGORITHMS, alg) ? ALGORITHMS[alg] : undefined;
  if (a === undefined) return false;
  const type = key.asymmetricKeyType;
  if (type !== a.keyType && !(a.keyType === 'rsa' && type === 'rsa-pss')) return false;
  if (a.curve !== undefined && key.asymmetricKeyDetails?.namedCurve !== a.curve) return false;
  try {
    return verify(
      a.hash,
      jwt.signingInput,
      a.pss
        ? {
            key,
            padding: constants.RSA_PKCS1_PSS_PADDING,
            saltLength: constants.RSA_PSS_SALTLEN_DIGEST,
          }
        : a.ecdsa
          ? { key, dsaEncoding: 'ieee-p1363' }
          : key,
      jwt.signature,
    );
  } catch {
    return false;
  }
}

export interface ClaimRules {
  issuer: string;
  audience: string;
  /** Seconds since the epoch (default: now). */
  now?: number;
  /** Tolerated clock difference in seconds (default 60). */
  leewaySec?: number;
}

/** Checks iss, aud, exp (required), nbf and sub (required); throws JwtError. */
export function checkClaims(payload: Record<string, unknown>, rules: ClaimRules): void {
  const now = rules.now ?? Math.floor(Date.now() / 1000);
  const leeway = rules.leewaySec ?? 60;
  if (payload.iss !== rules.issuer) throw new JwtError('the token was issued by another issuer');
  const aud = payload.aud;
  const auds = Array.isArray(aud) ? aud : [aud];
  if (!auds.includes(rules.audience)) throw new JwtError('the token is meant for another audience');
  if (typeof payload.exp !== 'number') throw new JwtError('the token has no expiry');
  if (payload.exp <= now - leeway) throw new JwtError('the token has expired');
  if (typeof payload.nbf === 'number' && payload.nbf > now + leeway)
    throw new JwtError('the token is not valid yet');
  if (typeof payload.sub !== 'string' || payload.sub === '')
    throw new JwtError('the token has no subject');
}

/** The token's scopes: `scope` (space-separated, RFC 9068) or `scp` (a list or a string). */
export function scopesOf(payload: Record<string, unknown>): Set<string> {
  const raw = payload.scope ?? payload.scp;
  const list = Array.isArray(raw)
    ? raw.filter((s): s is string => typeof s === 'string')
    : typeof raw === 'string'
      ? raw.split(' ')
      : [];
  return new Set(list.filter((s) => s !== ''));
}
