import type Database from 'better-sqlite3';
import { IdempotencyRecord, IdempotencyRepository } from '../ports/idempotency.repository';
import { sqlite } from './sqlite-errors';

/** Expired keys are deleted at most this often (on a claim). */
const PRUNE_EVERY_MS = 60_000;

interface Row {
  key: string;
  fingerprint: string;
  status: number | null;
  body: string | null;
  created_at: number;
}

/**
 * Idempotency-Key records in the embedded database. A claim is one statement (INSERT … ON
 * CONFLICT … WHERE expired), so two concurrent requests with one key — from two processes on the
 * same data directory too — never both run.
 */
export class SqliteIdempotencyRepository extends IdempotencyRepository {
  private readonly claimStmt: Database.Statement;
  private readonly getStmt: Database.Statement;
  private readonly completeStmt: Database.Statement;
  private readonly releaseStmt: Database.Statement;
  private readonly pruneStmt: Database.Statement;
  private lastPrune = 0;

  constructor(db: Database.Database) {
    super();
    sqlite('idempotency table setup', () =>
      db.exec(`
        CREATE TABLE IF NOT EXISTS idempotency_keys (
          key         TEXT PRIMARY KEY,
          fingerprint TEXT NOT NULL,
          status      INTEGER,
          body        TEXT,
          created_at  INTEGER NOT NULL
        ) WITHOUT ROWID;
        CREATE INDEX IF NOT EXISTS idempotency_keys_age ON idempotency_keys (created_at);
      `),
    );
    this.claimStmt = db.prepare(
      `INSERT INTO idempotency_keys (key, fingerprint, status, body, created_at) VALUES (@key, @fingerprint, NULL, NULL, @created_at)
       ON CONFLICT (key) DO UPDATE SET fingerprint = excluded.fingerprint, status = NULL, body = NULL, created_at = excluded.created_at
       WHERE idempotency_keys.created_at < @expired`,
    );
    this.getStmt = db.prepare('SELECT key, fingerprint, status, body, created_at FROM idempotency_keys WHERE key = ?');
    this.completeStmt = db.prepare('UPDATE idempotency_keys SET status = ?, body = ? WHERE key = ?');
    this.releaseStmt = db.prepare('DELETE FROM idempotency_keys WHERE key = ? AND status IS NULL');
    this.pruneStmt = db.prepare('DELETE FROM idempotency_keys WHERE created_at < ?');
  }

  override async claim(r: IdempotencyRecord, ttlMs: number): Promise<IdempotencyRecord | null> {
    const now = r.createdAt.getTime();
    return sqlite('idempotency claim', () => {
      if (now - this.lastPrune > PRUNE_EVERY_MS) {
        this.lastPrune = now;
        this.pruneStmt.run(now - ttlMs);
      }
      const res = this.claimStmt.run({ key: r.key, fingerprint: r.fingerprint, created_at: now, expired: now - ttlMs });
      if (res.changes > 0) return null;
      return toRecord(this.getStmt.get(r.key) as Row);
    });
  }

  override async complete(key: string, status: number, body: string): Promise<void> {
    sqlite('idempotency update', () => this.completeStmt.run(status, body, key));
  }

  override async release(key: string): Promise<void> {
    sqlite('idempotency delete', () => this.releaseStmt.run(key));
  }

  override async get(key: string): Promise<IdempotencyRecord | null> {
    const row = sqlite('idempotency query', () => this.getStmt.get(key) as Row | undefined);
    return row ? toRecord(row) : null;
  }
}

function toRecord(r: Row): IdempotencyRecord {
  return { key: r.key, fingerprint: r.fingerprint, status: r.status, body: r.body, createdAt: new Date(r.created_at) };
}
