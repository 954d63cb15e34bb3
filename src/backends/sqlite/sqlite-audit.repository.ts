import type Database from 'better-sqlite3';
import { AuditEntry, AuditQuery, AuditRepository } from '../ports/audit.repository';
import { sqlite } from './sqlite-errors';

interface Row {
  id: string;
  at: number;
  action: string;
  outcome: string;
  actor_kind: string;
  actor_id: string | null;
  actor_name: string | null;
  target: string | null;
  address: string | null;
  request_id: string | null;
  detail: string;
}

/** The audit log in the embedded SQLite database (table audit_log). */
export class SqliteAuditRepository extends AuditRepository {
  private readonly insertStmt: Database.Statement;
  private readonly pruneStmt: Database.Statement;

  constructor(private readonly db: Database.Database) {
    super();
    sqlite('audit table setup', () =>
      db.exec(`
        CREATE TABLE IF NOT EXISTS audit_log (
          id         TEXT PRIMARY KEY,
          at         INTEGER NOT NULL,
          action     TEXT NOT NULL,
          outcome    TEXT NOT NULL,
          actor_kind TEXT NOT NULL,
          actor_id   TEXT,
          actor_name TEXT,
          target     TEXT,
          address    TEXT,
          request_id TEXT,
          detail     TEXT NOT NULL
        ) WITHOUT ROWID;
        CREATE INDEX IF NOT EXISTS audit_log_at ON audit_log (at);
        CREATE INDEX IF NOT EXISTS audit_log_action ON audit_log (action, id);
        CREATE INDEX IF NOT EXISTS audit_log_actor ON audit_log (actor_id, id);
      `),
    );
    this.insertStmt = db.prepare(`
      INSERT INTO audit_log (id, at, action, outcome, actor_kind, actor_id, actor_name, target, address, request_id, detail)
      VALUES (@id, @at, @action, @outcome, @actor_kind, @actor_id, @actor_name, @target, @address, @request_id, @detail)`);
    this.pruneStmt = db.prepare('DELETE FROM audit_log WHERE at < ?');
  }

  override async append(e: AuditEntry): Promise<void> {
    sqlite('audit append', () =>
      this.insertStmt.run({
        id: e.id,
        at: e.at.getTime(),
        action: e.action,
        outcome: e.outcome,
        actor_kind: e.actor.kind,
        actor_id: e.actor.id,
        actor_name: e.actor.name,
        target: e.target,
        address: e.address,
        request_id: e.requestId,
        detail: JSON.stringify(e.detail ?? {}),
      }),
    );
  }

  override async list(q: AuditQuery): Promise<{ entries: AuditEntry[]; hasMore: boolean }> {
    const where: string[] = [];
    const params: Record<string, string | number> = { limit: q.limit + 1 };
    if (q.action !== undefined) {
      where.push('action = @action');
      params.action = String(q.action);
    }
    if (q.actor !== undefined) {
      where.push('actor_id = @actor');
      params.actor = String(q.actor);
    }
    if (q.since !== undefined) {
      where.push('at >= @since');
      params.since = q.since.getTime();
    }
    if (q.before !== undefined) {
      where.push('id < @before');
      params.before = String(q.before);
    }
    const sql = `SELECT * FROM audit_log ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY id DESC LIMIT @limit`;
    const rows = sqlite('audit list', () => this.db.prepare(sql).all(params)) as Row[];
    return { entries: rows.slice(0, q.limit).map(toEntry), hasMore: rows.length > q.limit };
  }

  override async prune(before: Date): Promise<number> {
    return sqlite('audit prune', () => this.pruneStmt.run(before.getTime()).changes);
  }
}

function toEntry(r: Row): AuditEntry {
  return {
    id: r.id,
    at: new Date(r.at),
    action: r.action,
    outcome: r.outcome === 'failure' ? 'failure' : 'success',
    actor: { kind: r.actor_kind as AuditEntry['actor']['kind'], id: r.actor_id, name: r.actor_name },
    target: r.target,
    address: r.address,
    requestId: r.request_id,
    detail: JSON.parse(r.detail) as Record<string, unknown>,
  };
}
