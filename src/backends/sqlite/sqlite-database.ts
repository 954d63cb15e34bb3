import Database from 'better-sqlite3';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { BackendUnavailableError } from '../../common/errors';
import { DocumentDatabase } from '../ports/document-database.port';
import { SqliteMemoryIndex } from './sqlite-memory-index';
import { SqliteRateLimitRepository } from './sqlite-rate-limit.repository';
import { SqliteSessionRepository } from './sqlite-session.repository';
import { SqliteTokenRepository } from './sqlite-token.repository';

/** The embedded default document database: one SQLite file (WAL) under the data directory. */
export class SqliteDocumentDatabase extends DocumentDatabase {
  readonly kind = 'sqlite';
  memories!: SqliteMemoryIndex;
  tokens!: SqliteTokenRepository;
  sessions!: SqliteSessionRepository;
  rateLimits!: SqliteRateLimitRepository;
  private db?: Database.Database;

  constructor(readonly file: string) {
    super();
  }

  override async init(): Promise<void> {
    fs.mkdirSync(path.dirname(this.file), { recursive: true, mode: 0o700 });
    const db = new Database(this.file);
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = NORMAL');
    db.pragma('busy_timeout = 5000');
    db.pragma('foreign_keys = ON');
    this.db = db;
    this.memories = new SqliteMemoryIndex(db);
    this.tokens = new SqliteTokenRepository(db);
    this.sessions = new SqliteSessionRepository(db);
    this.rateLimits = new SqliteRateLimitRepository(db);
  }

  override async ping(): Promise<void> {
    this.handle().prepare('SELECT 1').get();
  }

  override async probe(): Promise<void> {
    const db = this.handle();
    try {
      db.exec('CREATE TABLE IF NOT EXISTS probe (id TEXT PRIMARY KEY, at INTEGER NOT NULL)');
      const id = `probe-${process.pid}-${Date.now()}`;
      db.prepare('INSERT INTO probe (id, at) VALUES (?, ?)').run(id, Date.now());
      const row = db.prepare('SELECT id FROM probe WHERE id = ?').get(id);
      db.prepare('DELETE FROM probe WHERE id = ?').run(id);
      if (!row) throw new Error('probe row was not read back');
    } catch (e) {
      throw new BackendUnavailableError('Document database', `SQLite probe failed: ${(e as Error).message}`);
    }
  }

  override describe(): string {
    return `embedded SQLite at ${this.file}`;
  }

  override async close(): Promise<void> {
    if (this.db?.open) this.db.close();
  }

  private handle(): Database.Database {
    if (!this.db?.open) throw new BackendUnavailableError('Document database', 'the embedded database is closed');
    return this.db;
  }
}
