import type Database from 'better-sqlite3';
import { RateLimitHits, RateLimitRepository } from '../ports/rate-limit.repository';
import { sqlite } from './sqlite-errors';

/** Ended windows are deleted at most this often (on an increment). */
const PRUNE_EVERY_MS = 60_000;

/**
 * Rate-limit counters in the embedded SQLite database: one row per key. Each call is a single
 * statement, so concurrent callers (several processes on one data directory included) never
 * lose a hit. Rows whose window has ended are pruned on increment, at most once a minute.
 */
export class SqliteRateLimitRepository extends RateLimitRepository {
  private readonly incrementStmt: Database.Statement;
  private readonly decrementStmt: Database.Statement;
  private readonly resetStmt: Database.Statement;
  private readonly pruneStmt: Database.Statement;
  private lastPrune = 0;

  constructor(db: Database.Database) {
    super();
    sqlite('rate-limit table setup', () =>
      db.exec(`
        CREATE TABLE IF NOT EXISTS rate_limits (
          key      TEXT PRIMARY KEY,
          hits     INTEGER NOT NULL,
          reset_at INTEGER NOT NULL
        ) WITHOUT ROWID;
        CREATE INDEX IF NOT EXISTS rate_limits_reset ON rate_limits (reset_at);
      `),
    );
    // A live window counts one more hit; an ended one starts again at 1 (SET sees the old row).
    this.incrementStmt = db.prepare(`
      INSERT INTO rate_limits (key, hits, reset_at) VALUES (@key, 1, @resetAt)
      ON CONFLICT(key) DO UPDATE SET
        hits     = CASE WHEN reset_at <= @now THEN 1 ELSE hits + 1 END,
        reset_at = CASE WHEN reset_at <= @now THEN excluded.reset_at ELSE reset_at END
      RETURNING hits, reset_at`);
    this.decrementStmt = db.prepare('UPDATE rate_limits SET hits = hits - 1 WHERE key = ? AND reset_at > ? AND hits > 0');
    this.resetStmt = db.prepare('DELETE FROM rate_limits WHERE key = ?');
    this.pruneStmt = db.prepare('DELETE FROM rate_limits WHERE reset_at <= ?');
  }

  override async increment(key: string, windowMs: number): Promise<RateLimitHits> {
    const now = Date.now();
    const row = sqlite('rate-limit increment', () => {
      if (now - this.lastPrune >= PRUNE_EVERY_MS) {
        this.pruneStmt.run(now);
        this.lastPrune = now;
      }
      return this.incrementStmt.get({ key, now, resetAt: now + windowMs });
    }) as { hits: number; reset_at: number };
    return { totalHits: row.hits, resetTime: new Date(row.reset_at) };
  }

  override async decrement(key: string): Promise<void> {
    sqlite('rate-limit decrement', () => this.decrementStmt.run(key, Date.now()));
  }

  override async reset(key: string): Promise<void> {
    sqlite('rate-limit reset', () => this.resetStmt.run(key));
  }
}
