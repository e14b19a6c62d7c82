/**
 * Principals: who a request acts for. The transports carry a principal as a string
 * (`session:<uuid>` for a session token, `oauth:<issuer>#<sub>` for an OAuth token); this
 * directory maps it to the identity a call's context and a view need.
 */
import type { SessionRecord, SessionStore } from '../sessions/store.js';

export interface Identity {
  principal: string;
  /** The moonhub session (session tokens and `serve --stdio --session`). */
  session_uuid?: string;
  agent?: string;
  target?: string;
}

const SESSION = 'session:';

export function sessionPrincipal(uuid: string): string {
  return SESSION + uuid;
}

export function sessionIdentity(rec: SessionRecord): Identity {
  const id: Identity = {
    principal: sessionPrincipal(rec.session_uuid),
    session_uuid: rec.session_uuid,
  };
  if (rec.agent !== undefined) id.agent = rec.agent;
  if (rec.target !== undefined) id.target = rec.target;
  return id;
}

export class PrincipalDirectory {
  private readonly known = new Map<string, Identity>();

  constructor(
    private store: SessionStore | undefined,
    private readonly hubId: string,
    /** Called when a principal comes back as another agent or target (claims changed). */
    private readonly onIdentityChange?: () => void,
    private readonly maxKnown = 10_000,
  ) {}

  /** Uses a sessions database opened after the directory was made. */
  attach(store: SessionStore): void {
    this.store = store;
  }

  /** Records an identity just authenticated. */
  remember(identity: Identity): void {
    const before = this.known.get(identity.principal);
    if (before === undefined && this.known.size >= this.maxKnown)
      this.known.delete(this.known.keys().next().value as string);
    this.known.set(identity.principal, identity);
    if (
      before !== undefined &&
      (before.agent !== identity.agent || before.target !== identity.target)
    )
      this.onIdentityChange?.();
  }

  /** The identity behind a principal; undefined when it is unknown or its session is gone. */
  get(principal: string): Identity | undefined {
    const hit = this.known.get(principal);
    if (hit !== undefined || !principal.startsWith(SESSION) || this.store === undefined) return hit;
    const rec = this.store.get(principal.slice(SESSION.length));
    if (
      rec === undefined ||
      rec.revoked_at !== undefined ||
      rec.role !== 'agent' ||
      rec.hub_id !== this.hubId
    )
      return undefined;
    const identity = sessionIdentity(rec);
    this.remember(identity);
    return identity;
  }

  /**
   * Re-checks the session principals seen so far (the sessions database changed): forgets and
   * returns those whose session is no longer active.
   */
  dropRevokedSessions(): string[] {
    if (this.store === undefined) return [];
    const out: string[] = [];
    for (const key of this.known.keys()) {
      if (!key.startsWith(SESSION)) continue;
      const rec = this.store.get(key.slice(SESSION.length));
      if (rec === undefined || rec.revoked_at !== undefined) {
        this.known.delete(key);
        out.push(key);
      }
    }
    return out;
  }
}
