import type Database from 'better-sqlite3';
import { WriteIntent, WriteIntentRepository } from '../ports/write-intent.repository';
import { sqlite } from './sqlite-errors';

/** Pending memory writes and deletes in the embedded database (see WriteIntentRepository). */
export class SqliteWriteIntentRepository extends WriteIntentRepository {
  private readonly addStmt: Database.Statement;
  private readonly removeStmt: Database.Statement;
  private readonly olderStmt: Database.Statement;
  private readonly addAll: (intents: WriteIntent[]) => void;

  constructor(db: Database.Database) {
    super();
    sqlite('write-intent table setup', () => {
      db.exec(`
        CREATE TABLE IF NOT EXISTS write_intents (
          object_key TEXT PRIMARY KEY,
          memory_id  TEXT NOT NULL,
          created_at INTEGER NOT NULL
        ) WITHOUT ROWID;
        CREATE INDEX IF NOT EXISTS write_intents_age ON write_intents (created_at);
      `);
      // Delete intents (issue 46): databases from before them get the column, every row a write.
      const columns = new Set((db.prepare('PRAGMA table_info(write_intents)').all() as Array<{ name: string }>).map((c) => c.name));
      if (!columns.has('kind')) db.exec("ALTER TABLE write_intents ADD COLUMN kind TEXT NOT NULL DEFAULT 'write'");
    });
    this.addStmt = db.prepare('INSERT OR REPLACE INTO write_intents (object_key, memory_id, created_at, kind) VALUES (?, ?, ?, ?)');
    this.removeStmt = db.prepare('DELETE FROM write_intents WHERE object_key = ?');
    this.olderStmt = db.prepare('SELECT object_key, memory_id, created_at, kind FROM write_intents WHERE created_at < ? ORDER BY created_at LIMIT ?');
    this.addAll = db.transaction((intents: WriteIntent[]) => {
      for (const i of intents) this.addStmt.run(i.objectKey, i.memoryId, i.createdAt.getTime(), i.kind ?? 'write');
    });
  }

  override async add(i: WriteIntent): Promise<void> {
    sqlite('write-intent insert', () => this.addStmt.run(i.objectKey, i.memoryId, i.createdAt.getTime(), i.kind ?? 'write'));
  }

  override async addMany(intents: WriteIntent[]): Promise<void> {
    sqlite('write-intent insert', () => this.addAll(intents));
  }

  override async remove(objectKey: string): Promise<void> {
    sqlite('write-intent delete', () => this.removeStmt.run(objectKey));
  }

  override async olderThan(before: Date, limit: number): Promise<WriteIntent[]> {
    const rows = sqlite('write-intent query', () => this.olderStmt.all(before.getTime(), limit) as Array<{ object_key: string; memory_id: string; created_at: number; kind: string }>);
    return rows.map((r) => ({ objectKey: r.object_key, memoryId: r.memory_id, createdAt: new Date(r.created_at), kind: r.kind === 'delete' ? 'delete' : 'write' }));
  }
}
