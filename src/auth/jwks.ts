/**
 * The issuer's signing keys (a JWKS document), fetched from its `jwks_uri` and cached. A token
 * naming a key we do not have triggers one refetch (at most every `minRefetchMs`), which covers
 * key rotation without letting bad tokens hammer the issuer.
 */
import { createPublicKey, type KeyObject } from 'node:crypto';

export interface JwksOptions {
  /** Keys are refetched after this long (default 10 min). */
  maxAgeMs?: number;
  /** Unknown key ids refetch at most this often (default 30 s). */
  minRefetchMs?: number;
  /** A fetch that takes longer fails (default 5 s). */
  timeoutMs?: number;
  onError?: (err: unknown) => void;
}

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
    const found = stale ? undefined : this.find(kid, alg);
    if (found !== undefined) return found;
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
      const doc = (await res.json()) as { keys?: unknown };
      if (!Array.isArray(doc.keys)) throw new Error(`JWKS document at ${this.uri} has no keys`);
      const keys: Key[] = [];
      for (const jwk of doc.keys as Record<string, unknown>[]) {
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
}
