/**
 * The issuer's signing keys (a JWKS document), fetched from its `jwks_uri` and cached. A token
 * naming a key we do not have triggers one refetch (at most every `minRefetchMs`), which covers
 * key rotation without letting bad tokens hammer the issuer. The issuer is untrusted input too:
 * its document is read up to `maxBytes` (a huge or endless body is cut off, not held), at most
 * MAX_KEYS keys are used, and keys past their age keep serving while the refetch runs, so a
 * stalled issuer never makes a request with a known key wait.
 */
import { createPublicKey, type KeyObject } from 'node:crypto';

export interface JwksOptions {
  /** Keys are refetched after this long (default 10 min). */
  maxAgeMs?: number;
  /** Unknown key ids refetch at most this often (default 30 s). */
  minRefetchMs?: number;
  /** A fetch that takes longer fails (default 5 s). */
  timeoutMs?: number;
  /** Bytes of the JWKS document read at most (default 1 MiB, `auth.oauth.jwks_max_bytes`). */
  maxBytes?: number;
  onError?: (err: unknown) => void;
}

export const DEFAULT_JWKS_MAX_BYTES = 1024 * 1024;
/** Keys of one document used (an issuer publishes a handful; each is parsed on the hub's thread). */
export const MAX_KEYS = 100;

interface Key {
  kid: string | undefined;
  alg: string | undefined;
  key: KeyObject;
}

export class JwksCache {
  private keys: Key[] = [];
  private fetchedAt = 0;
  private pending: Promise<void> | undefined;

  constructor(
    private readonly uri: string,
    private readonly opts: JwksOptions = {},
  ) {}

  /** The key for a token header, or undefined; a promise only when the keys must be fetched. */
  keyFor(
    kid: string | undefined,
    alg: string,
  ): KeyObject | undefined | Promise<KeyObject | undefined> {
    const now = Date.now();
    const stale = now - this.fetchedAt > (this.opts.maxAgeMs ?? 600_000);
    const found = this.find(kid, alg);
    if (found !== undefined) {
      // An old key still serves while the refetch runs: a stalled issuer delays nobody.
      if (stale) void this.refresh();
      return found;
    }
    const mayRefetch = stale || now - this.fetchedAt >= (this.opts.minRefetchMs ?? 30_000);
    if (!mayRefetch) return undefined;
    return this.refresh().then(() => this.find(kid, alg));
  }

  private find(kid: string | undefined, alg: string): KeyObject | undefined {
    const usable = this.keys.filter((k) => k.alg === undefined || k.alg === alg);
    if (kid !== undefined) return usable.find((k) => k.kid === kid)?.key;
    // No kid: acceptable only when the choice is unambiguous.
    return usable.length === 1 ? usable[0]!.key : undefined;
  }

  private refresh(): Promise<void> {
    this.pending ??= this.fetchKeys().finally(() => (this.pending = undefined));
    return this.pending;
  }

  private async fetchKeys(): Promise<void> {
    // Counted as a fetch even when it fails, so a dead issuer is not asked on every request.
    this.fetchedAt = Date.now();
    try {
      const res = await fetch(this.uri, {
        signal: AbortSignal.timeout(this.opts.timeoutMs ?? 5000),
        headers: { Accept: 'application/json' },
        redirect: 'error',
      });
      if (!res.ok) throw new Error(`JWKS fetch from ${this.uri} answered ${res.status}`);
      const doc = JSON.parse(await this.readBody(res)) as { keys?: unknown } | null;
      if (!Array.isArray(doc?.keys)) throw new Error(`JWKS document at ${this.uri} has no keys`);
      const keys: Key[] = [];
      for (const jwk of doc.keys as Record<string, unknown>[]) {
        if (keys.length >= MAX_KEYS) break;
        if (typeof jwk !== 'object' || jwk === null) continue;
        if (jwk.use !== undefined && jwk.use !== 'sig') continue;
        try {
          keys.push({
            kid: typeof jwk.kid === 'string' ? jwk.kid : undefined,
            alg: typeof jwk.alg === 'string' ? jwk.alg : undefined,
            key: createPublicKey({ key: jwk as never, format: 'jwk' }),
          });
        } catch {
          // A key we cannot use (symmetric, unknown curve) is skipped, not fatal.
        }
      }
      this.keys = keys;
    } catch (err) {
      this.opts.onError?.(err);
    }
  }

  /** The body as text, refused (and the connection dropped) past `maxBytes`. */
  private async readBody(res: Response): Promise<string> {
    const max = this.opts.maxBytes ?? DEFAULT_JWKS_MAX_BYTES;
    const declared = Number(res.headers.get('content-length') ?? NaN);
    const tooBig = () =>
      new Error(`JWKS document at ${this.uri} is over ${max} bytes (auth.oauth.jwks_max_bytes)`);
    if (declared > max) {
      await res.body?.cancel();
      throw tooBig();
    }
    const chunks: Uint8Array[] = [];
    let size = 0;
    for await (const chunk of res.body ?? []) {
      size += (chunk as Uint8Array).byteLength;
      if (size > max) {
        // Leaving the loop cancels the stream: the rest is never read.
        throw tooBig();
      }
      chunks.push(chunk as Uint8Array);
    }
    return Buffer.concat(chunks).toString('utf8');
  }
}
