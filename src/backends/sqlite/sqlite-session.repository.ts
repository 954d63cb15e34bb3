import type Database from 'better-sqlite3';
import { SessionRepository, StoredSession } from '../ports/session.repository';
import { sqlite } from './sqlite-errors';

interface SessionRow {
  sid: string;
  data: string;
  expires_at: number;
}

const toSession = (r: SessionRow): StoredSession => ({ sid: r.sid, data: r.data, expiresAt: new Date(r.expires_at) });

/** Admin sessions in the embedded SQLite database; expired rows are never returned and are pruned on write. */
export class SqliteSessionRepository extends SessionRepository {
  private readonly getStmt: Database.Statement;
  private readonly upsertStmt: Database.Statement;
  private readonly destroyStmt: Database.Statement;
  private readonly allStmt: Database.Statement;
  private readonly pruneStmt: Database.Statement;

  constructor(private readonly db: Database.Database) {
    super();
    sqlite('session table setup', () =>
      db.exec(`
        CREATE TABLE IF NOT EXISTS admin_sessions (
          sid        TEXT PRIMARY KEY,
          data       TEXT NOT NULL,
          expires_at INTEGER NOT NULL
        );
        CREATE INDEX IF NOT EXISTS admin_sessions_expires ON admin_sessions (expires_at);
      `),
    );
    this.getStmt = db.prepare('SELECT sid, data, expires_at FROM admin_sessions WHERE sid = ? AND expires_at > ?');
    this.upsertStmt = db.prepare('INSERT INTO admin_sessions (sid, data, expires_at) VALUES (?, ?, ?) ON CONFLICT(sid) DO UPDATE SET data = excluded.data, expires_at = excluded.expires_at');
    this.destroyStmt = db.prepare('DELETE FROM admin_sessions WHERE sid = ?');
    this.allStmt = db.prepare('SELECT sid, data, expires_at FROM admin_sessions WHERE expires_at > ? ORDER BY sid');
    this.pruneStmt = db.prepare('DELETE FROM admin_sessions WHERE expires_at <= ?');
  }

  override async get(sid: string): Promise<StoredSession | null> {
    const row = sqlite('session lookup', () => this.getStmt.get(sid, Date.now())) as SessionRow | undefined;
    return row ? toSession(row) : null;
  }

  override async set(s: StoredSession): Promise<void> {
    sqlite('session write', () => {
      this.pruneStmt.run(Date.now());
      this.upsertStmt.run(s.sid, s.data, s.expiresAt.getTime());
    });
  }

  override async destroy(sid: string): Promise<void> {
    sqlite('session delete', () => this.destroyStmt.run(sid));
  }

  override async all(): Promise<StoredSession[]> {
    return (sqlite('session list', () => this.allStmt.all(Date.now())) as SessionRow[]).map(toSession);
  }
}
