/**
 * 2026-07-28 request states (SEP-2322): the answers a request already has, handed to the client
 * in an `input_required` result and carried back on its retry. They are sealed with an HMAC so a
 * client cannot claim answers it never gave, and bound to the request (method, name, principal)
 * so a state cannot be replayed on another one.
 *
 * A retry may land on another process than the one that asked (`--workers`, instances on Redis
 * behind a load balancer): every process of a hub must seal with the same key. The key is
 * derived from the cluster's shared answer key (`useSecret`); a single process keeps a random
 * one, so a restart makes old states fail their check, as they should.
 *
 * A state carries the time it was sealed and is refused once older than
 * `limits.request_state_ttl_ms` (default 5 min, the time a 2025 client has to answer the same
 * server request): the binding names the method, tool and principal but not the arguments, so
 * without an expiry an old "accept" could be replayed on a later call of the same tool forever.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { wireError } from '../errors.js';

/** Separates this key from the answer-id tags made with the same shared secret. */
const PURPOSE = 'moonhub 2026-07-28 requestState v1';

/** `limits.request_state_ttl_ms`: how long after sealing a state is accepted. */
export const DEFAULT_REQUEST_STATE_TTL_MS = 5 * 60_000;

export interface RequestStateOptions {
  /** How long a state stays valid after it was sealed (default DEFAULT_REQUEST_STATE_TTL_MS). */
  ttlMs?: number | undefined;
  /** The clock (tests). */
  now?: () => number;
}

export class RequestStates {
  /** The key new states are sealed with, and the one before it (a shared key that changed). */
  private keys: Buffer[];
  private readonly ttlMs: number;
  private readonly now: () => number;

  constructor(secret?: Uint8Array, opts: RequestStateOptions = {}) {
    this.keys = [secret === undefined ? randomBytes(32) : derive(secret)];
    this.ttlMs = opts.ttlMs ?? DEFAULT_REQUEST_STATE_TTL_MS;
    this.now = opts.now ?? Date.now;
  }

  /**
   * Seals with a key derived from the hub's shared secret from now on; states sealed with the
   * previous key still open, so a key change does not fail the retries already under way.
   */
  useSecret(secret: Uint8Array): void {
    const key = derive(secret);
    if (this.keys[0]!.equals(key)) return;
    this.keys = [key, this.keys[0]!];
  }

  /** The state a client carries back: the answers, bound to `binding`, stamped with the time. */
  seal(binding: string, answers: Record<string, unknown>): string {
    const sealed = { b: binding, a: answers, t: this.now() };
    const payload = Buffer.from(JSON.stringify(sealed)).toString('base64url');
    return payload + '.' + mac(this.keys[0]!, payload);
  }

  /** The answers a state holds, or the `input_state_invalid` error a bad one deserves. */
  open(state: unknown, binding: string): Record<string, unknown> {
    if (typeof state !== 'string') throw invalidState('requestState must be a string');
    const dot = state.lastIndexOf('.');
    const payload = dot > 0 ? state.slice(0, dot) : '';
    const given = Buffer.from(dot > 0 ? state.slice(dot + 1) : '');
    const genuine = this.keys.some((key) => {
      const expected = Buffer.from(mac(key, payload));
      return given.length === expected.length && timingSafeEqual(given, expected);
    });
    if (!genuine) throw invalidState('requestState failed its integrity check');
    const decoded = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as {
      b: string;
      a: Record<string, unknown>;
      t?: number;
    };
    if (decoded.b !== binding) throw invalidState('requestState belongs to another request');
    // Sealed by this hub's key, so the time is ours (another instance's clock: skew shifts the
    // TTL by as much). A state of an older moonhub has none and is treated as expired.
    const age = typeof decoded.t === 'number' ? this.now() - decoded.t : Infinity;
    if (age > this.ttlMs)
      throw invalidState(
        `requestState expired: ${
          age === Infinity ? 'it carries no issue time' : `issued ${Math.round(age / 1000)} s ago`
        }, and states are accepted for ${this.ttlMs} ms (limits.request_state_ttl_ms); ` +
          'send the request again without requestState and answer its input requests anew',
      );
    return decoded.a;
  }
}

function derive(secret: Uint8Array): Buffer {
  return createHmac('sha256', secret).update(PURPOSE).digest();
}

function mac(key: Buffer, payload: string): string {
  return createHmac('sha256', key).update(payload).digest('base64url');
}

export function invalidState(detail: string): Error {
  return wireError('input_state_invalid', { detail });
}
