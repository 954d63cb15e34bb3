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

  constructor(private readonly db: Database.Database) {
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

  override async forget(namespace: string, memoryIds?: readonly string[]): Promise<number> {
    // The namespace as idempotencyKeyNamespace reads it from the key: the part after the caller.
    const where = namespace === 'default' ? ["substr(key, instr(key, '|') + 1, 3) <> 'ns:'"] : ["substr(key, instr(key, '|'), @marker_len) = @marker"];
    const params: Record<string, unknown> = namespace === 'default' ? {} : { marker: `|ns:${namespace}|`, marker_len: namespace.length + 5 };
    if (memoryIds !== undefined) {
      if (memoryIds.length === 0) return 0;
      // idempotencyAnswerIds in SQL: the created memory and its near-copies.
      where.push(`json_valid(body) AND (json_extract(body, '$.memory.id') IN (SELECT value FROM json_each(@ids))
        OR EXISTS (SELECT 1 FROM json_each(body, '$.similar') s WHERE json_extract(s.value, '$.id') IN (SELECT value FROM json_each(@ids))))`);
      params.ids = JSON.stringify(memoryIds);
    }
    return sqlite('idempotency delete', () => this.db.prepare(`DELETE FROM idempotency_keys WHERE ${where.join(' AND ')}`).run(params).changes);
  }
}

function toRecord(r: Row): IdempotencyRecord {
  return { key: r.key, fingerprint: r.fingerprint, status: r.status, body: r.body, createdAt: new Date(r.created_at) };
}
