/**
 * The embedded shared state of one machine: an SQLite file (`cluster.db`) in the hub's data
 * folder, opened by every `--workers` process. WAL lets readers run beside the one writer; a
 * write waits up to 5 s for another worker's.
 */
import { chmodSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';

export const CLUSTER_DB_FILE = 'cluster.db';

const SCHEMA = `
CREATE TABLE IF NOT EXISTS proto_sessions (
  id         TEXT PRIMARY KEY,
  principal  TEXT,
  record     TEXT NOT NULL,
  last_seen  INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS proto_sessions_seen ON proto_sessions (last_seen);
CREATE INDEX IF NOT EXISTS proto_sessions_principal ON proto_sessions (principal);
CREATE TABLE IF NOT EXISTS stream_events (
  stream  TEXT NOT NULL,
  seq     INTEGER NOT NULL,
  data    TEXT,
  at      INTEGER NOT NULL,
  PRIMARY KEY (stream, seq)
);
CREATE INDEX IF NOT EXISTS stream_events_at ON stream_events (at);
CREATE TABLE IF NOT EXISTS stream_log (
  stream     TEXT PRIMARY KEY,
  principal  TEXT NOT NULL,
  bytes      INTEGER NOT NULL,
  at         INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS stream_log_at ON stream_log (at);
CREATE INDEX IF NOT EXISTS stream_log_principal ON stream_log (principal, at);
CREATE TABLE IF NOT EXISTS stream_log_bytes (
  who    TEXT PRIMARY KEY,
  bytes  INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS buckets (
  key      TEXT PRIMARY KEY,
  tokens   REAL NOT NULL,
  at       INTEGER NOT NULL,
  expires  INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS instances (
  id     TEXT PRIMARY KEY,
  until  INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS buckets_expires ON buckets (expires);
`;

export function openClusterDb(dataDir: string): Database.Database {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const file = join(dataDir, CLUSTER_DB_FILE);
  let db: Database.Database;
  try {
    db = new Database(file);
  } catch (err) {
    throw new Error(`cannot open the cluster database ${file}: ${(err as Error).message}`);
  }
  chmodSync(file, 0o600);
  db.pragma('journal_mode = WAL');
  db.pragma('busy_timeout = 5000');
  // Losing the last transactions at a power cut only loses sessions a client can re-open.
  db.pragma('synchronous = NORMAL');
  db.exec(SCHEMA);
  return db;
}
