/**
 * The sessions database: one SQLite file in the hub's data folder, shared by the running hub and
 * the `moonhub session` commands. A session belongs to one hub id, an agent and optionally a
 * target; its token is shown once at creation and only its hash is kept. Every token check reads
 * the database, so a running hub sees new and revoked sessions at once.
 */
import { chmodSync, existsSync, mkdirSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { newToken, parseToken, secretMatches } from './tokens.js';

/** An agent session uses /mcp; an admin session uses the admin API only. */
export type SessionRole = 'agent' | 'admin';

export interface SessionRecord {
  session_uuid: string;
  hub_id: string;
  role: SessionRole;
  agent?: string;
  target?: string;
  name?: string;
  /** ISO 8601. */
  created_at: string;
  revoked_at?: string;
}

export interface NewSession {
  hub_id: string;
  role?: SessionRole;
  agent?: string;
  target?: string;
  name?: string;
}

interface Row {
  uuid: string;
  hub_id: string;
  role: SessionRole;
  agent: string | null;
  target: string | null;
  name: string | null;
  created_at: number;
  revoked_at: number | null;
}

const SCHEMA = `
CREATE TABLE IF NOT EXISTS sessions (
  uuid        TEXT PRIMARY KEY,
  hub_id      TEXT NOT NULL,
  role        TEXT NOT NULL CHECK (role IN ('agent', 'admin')),
  agent       TEXT,
  target      TEXT,
  name        TEXT,
  selector    TEXT NOT NULL UNIQUE,
  token_hash  BLOB NOT NULL,
  created_at  INTEGER NOT NULL,
  revoked_at  INTEGER
);
`;

const COLUMNS = 'uuid, hub_id, role, agent, target, name, created_at, revoked_at';

function toRecord(row: Row): SessionRecord {
  const rec: SessionRecord = {
    session_uuid: row.uuid,
    hub_id: row.hub_id,
    role: row.role,
    created_at: new Date(row.created_at).toISOString(),
  };
  if (row.agent !== null) rec.agent = row.agent;
  if (row.target !== null) rec.target = row.target;
  if (row.name !== null) rec.name = row.name;
  if (row.revoked_at !== null) rec.revoked_at = new Date(row.revoked_at).toISOString();
  return rec;
}

export const DATABASE_FILE = 'sessions.db';

/**
 * A session as replicated between hubs (`sessions/redis-sync.ts`): everything the row holds,
 * the token's hash included (never the token). Times are epoch ms.
 */
export interface ReplicatedSession {
  uuid: string;
  hub_id: string;
  role: SessionRole;
  agent: string | null;
  target: string | null;
  name: string | null;
  selector: string;
  /** SHA-256 of the token's secret, base64url. */
  token_hash: string;
  created_at: number;
  revoked_at: number | null;
}

export class SessionStore {
  private readonly db: Database.Database;
  private readonly byUuid: Database.Statement<[string], Row>;
  private readonly bySelector: Database.Statement<[string], Row & { token_hash: Buffer }>;
  private readonly dataVersion: Database.Statement<[], number>;
  /** Our own writes, which `PRAGMA data_version` does not count. */
  private localWrites = 0;
  private readonly writeListeners = new Set<(uuid: string) => void>();

  private constructor(db: Database.Database) {
    this.db = db;
    this.byUuid = db.prepare(`SELECT ${COLUMNS} FROM sessions WHERE uuid = ?`);
    this.bySelector = db.prepare(`SELECT ${COLUMNS}, token_hash FROM sessions WHERE selector = ?`);
    this.dataVersion = db.prepare<[], number>('PRAGMA data_version').pluck();
  }

  /** Opens (creating when needed) the database in `dataDir`, readable by its owner only. */
  static open(dataDir: string): SessionStore {
    mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    const file = join(dataDir, DATABASE_FILE);
    let db: Database.Database;
    try {
      db = new Database(file);
    } catch (err) {
      throw new Error(`cannot open the sessions database ${file}: ${(err as Error).message}`);
    }
    chmodSync(file, 0o600);
    db.pragma('journal_mode = WAL');
    db.pragma('busy_timeout = 5000');
    db.exec(SCHEMA);
    return new SessionStore(db);
  }

  /**
   * Opens the database in `dataDir` only if it is there: a command that reads or revokes must
   * not create an empty database somewhere else and report "no such session". `from` says where
   * the folder came from, for the error.
   */
  static openExisting(dataDir: string, from: string): SessionStore {
    const file = join(dataDir, DATABASE_FILE);
    if (!existsSync(file)) {
      throw new Error(
        `no sessions database at ${file} (the data folder from ${from}); nothing was created. Point --data or data_dir in the config at the folder the hub serves with.`,
      );
    }
    return SessionStore.open(dataDir);
  }

  /** A new session and its token; the token is not kept and cannot be shown again. */
  create(spec: NewSession): { record: SessionRecord; token: string } {
    const uuid = randomUUID();
    const t = newToken();
    this.db
      .prepare(
        'INSERT INTO sessions (uuid, hub_id, role, agent, target, name, selector, token_hash, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)',
      )
      .run(
        uuid,
        spec.hub_id,
        spec.role ?? 'agent',
        spec.agent ?? null,
        spec.target ?? null,
        spec.name ?? null,
        t.selector,
        t.hash,
        Date.now(),
      );
    this.wrote(uuid);
    return { record: this.get(uuid)!, token: t.token };
  }

  get(uuid: string): SessionRecord | undefined {
    const row = this.byUuid.get(uuid);
    return row === undefined ? undefined : toRecord(row);
  }

  /** Sessions, oldest first; with `hubId`, only that hub's. */
  list(hubId?: string): SessionRecord[] {
    const rows =
      hubId === undefined
        ? this.db.prepare<[], Row>(`SELECT ${COLUMNS} FROM sessions ORDER BY created_at`).all()
        : this.db
            .prepare<[string], Row>(
              `SELECT ${COLUMNS} FROM sessions WHERE hub_id = ? ORDER BY created_at`,
            )
            .all(hubId);
    return rows.map(toRecord);
  }

  /** Revokes an active session (of `hubId`, when given); false when there was none. */
  revoke(uuid: string, hubId?: string): boolean {
    const sql =
      'UPDATE sessions SET revoked_at = ? WHERE uuid = ? AND revoked_at IS NULL' +
      (hubId === undefined ? '' : ' AND hub_id = ?');
    const args: unknown[] = [Date.now(), uuid];
    if (hubId !== undefined) args.push(hubId);
    const changed = this.db.prepare(sql).run(...args).changes > 0;
    if (changed) this.wrote(uuid);
    return changed;
  }

  /** The active session of `hubId` that `token` belongs to, or undefined. */
  verify(token: string, hubId: string): SessionRecord | undefined {
    const parts = parseToken(token);
    const row = parts === undefined ? undefined : this.bySelector.get(parts.selector);
    // Always one constant-time comparison, whether or not a row was found.
    const ok = secretMatches(parts?.secret ?? '', row?.token_hash);
    if (!ok || row === undefined || row.revoked_at !== null || row.hub_id !== hubId)
      return undefined;
    return toRecord(row);
  }

  /** Changes whenever any process commits to the database: caches compare it. */
  version(): number {
    return this.dataVersion.get()! + this.localWrites;
  }

  private wrote(uuid: string): void {
    this.localWrites++;
    for (const listener of this.writeListeners) listener(uuid);
  }

  /** Calls `listener` after each session this store creates or revokes (replication). */
  onWrite(listener: (uuid: string) => void): () => void {
    this.writeListeners.add(listener);
    return () => this.writeListeners.delete(listener);
  }

  /** Every session as replicated between hubs; one of them with `uuid`. */
  exportRows(uuid?: string): ReplicatedSession[] {
    const rows = this.db
      .prepare<unknown[], Omit<ReplicatedSession, 'token_hash'> & { token_hash: Buffer }>(
        `SELECT ${COLUMNS}, selector, token_hash FROM sessions` +
          (uuid === undefined ? '' : ' WHERE uuid = ?'),
      )
      .all(...(uuid === undefined ? [] : [uuid]));
    return rows.map((r) => ({ ...r, token_hash: r.token_hash.toString('base64url') }));
  }

  /**
   * Merges a session replicated from another hub: a new one is added, a revocation is applied
   * (a session never comes back from revoked). Returns true when this store changed. Listeners
   * are not called: the change came from the replica, not from here.
   */
  importRow(row: ReplicatedSession): boolean {
    const hash = Buffer.from(row.token_hash, 'base64url');
    const added = this.db
      .prepare(
        'INSERT OR IGNORE INTO sessions (uuid, hub_id, role, agent, target, name, selector, token_hash, created_at, revoked_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
      )
      .run(
        row.uuid,
        row.hub_id,
        row.role,
        row.agent,
        row.target,
        row.name,
        row.selector,
        hash,
        row.created_at,
        row.revoked_at,
      ).changes;
    const revoked =
      row.revoked_at === null
        ? 0
        : this.db
            .prepare('UPDATE sessions SET revoked_at = ? WHERE uuid = ? AND revoked_at IS NULL')
            .run(row.revoked_at, row.uuid).changes;
    if (added + revoked === 0) return false;
    this.localWrites++;
    return true;
  }

  close(): void {
    this.db.close();
  }
}
