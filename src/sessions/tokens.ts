/**
 * Session tokens: `mhs_<selector>_<secret>`. The selector finds the row; only a SHA-256 of the
 * secret is stored, and it is compared in constant time. Secrets are 256 random bits, so a
 * fast hash is enough (nothing to brute-force).
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

const TOKEN_PREFIX = 'mhs_';
const SELECTOR = /^[A-Za-z0-9_-]{16}$/;
const SECRET = /^[A-Za-z0-9_-]{43}$/;

export interface NewToken {
  token: string;
  selector: string;
  hash: Buffer;
}

function hashSecret(secret: string): Buffer {
  return createHash('sha256').update(secret).digest();
}

export function newToken(): NewToken {
  const selector = randomBytes(12).toString('base64url');
  const secret = randomBytes(32).toString('base64url');
  return { token: `${TOKEN_PREFIX}${selector}_${secret}`, selector, hash: hashSecret(secret) };
}

/** Splits a presented token; undefined when it is not shaped like one of ours. */
export function parseToken(token: string): { selector: string; secret: string } | undefined {
  if (!token.startsWith(TOKEN_PREFIX)) return undefined;
  const rest = token.slice(TOKEN_PREFIX.length);
  const selector = rest.slice(0, 16);
  const secret = rest.slice(17);
  if (rest[16] !== '_' || !SELECTOR.test(selector) || !SECRET.test(secret)) return undefined;
  return { selector, secret };
}

const DUMMY = hashSecret('');

/** Constant-time check of a secret against a stored hash (a dummy one when there is no row). */
export function secretMatches(secret: string, stored: Buffer | undefined): boolean {
  const given = hashSecret(secret);
  const ok = timingSafeEqual(given, stored?.length === given.length ? stored : DUMMY);
  return ok && stored !== undefined;
}
