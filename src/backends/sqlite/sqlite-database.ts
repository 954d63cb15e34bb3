import Database from 'better-sqlite3';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { BackendUnavailableError } from '../../common/errors';
import { DocumentDatabase } from '../ports/document-database.port';
import { sqlite } from './sqlite-errors';
import { SqliteIdempotencyRepository } from './sqlite-idempotency.repository';
import { SqliteAuditRepository } from './sqlite-audit.repository';
import { SqliteMemoryIndex } from './sqlite-memory-index';
import { SqliteRateLimitRepository } from './sqlite-rate-limit.repository';
import { SqliteSearchPool } from './sqlite-search-pool';
import { SAFETY_CHECKPOINT_PAGES, SqliteCheckpointer } from './sqlite-checkpointer';
import { SqliteSessionRepository } from './sqlite-session.repository';
import { SqliteTokenRepository } from './sqlite-token.repository';
import { SqliteWriteIntentRepository } from './sqlite-write-intent.repository';

/** The embedded default document database: one SQLite file (WAL) under the data directory. */
export class SqliteDocumentDatabase extends DocumentDatabase {
  readonly kind = 'sqlite';
  memories!: SqliteMemoryIndex;
  /** The embedding queue and vectors: the same adapter object as `memories` (EmbeddingQueue port). */
  get embeddings(): SqliteMemoryIndex {
    return this.memories;
  }
  tokens!: SqliteTokenRepository;
  sessions!: SqliteSessionRepository;
  rateLimits!: SqliteRateLimitRepository;
  writeIntents!: SqliteWriteIntentRepository;
  idempotency!: SqliteIdempotencyRepository;
  audit!: SqliteAuditRepository;
  private db?: Database.Database;
  private searchPool?: SqliteSearchPool;
  private checkpointer?: SqliteCheckpointer;

  /**
   * `searchWorkers`: worker threads that run searches on their own connections (0 = on the main thread);
   * `checkpointer: false` leaves the WAL checkpoint to SQLite on the writing connection (bench/insert-cost.js compares);
   * `preloadVectors: true` (a serving process with an embedding provider) loads the vectors at open,
   * with or without search workers; otherwise they stay on disk until a vector search asks for them.
   */
  constructor(
    readonly file: string,
    private readonly opts: { searchWorkers?: number; checkpointer?: boolean; preloadVectors?: boolean } = {},
  ) {
    super();
  }

  override async init(): Promise<void> {
    fs.mkdirSync(path.dirname(this.file), { recursive: true, mode: 0o700 });
    const db = new Database(this.file);
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = NORMAL');
    // The WAL is checkpointed on a worker thread (sqlite-checkpointer.ts); the main connection
    // only does so itself if that falls far behind. A WAL file left larger is cut back to 64 MiB.
    const checkpointer = this.opts.checkpointer === false ? undefined : new SqliteCheckpointer(this.file);
    if (checkpointer) db.pragma(`wal_autocheckpoint = ${SAFETY_CHECKPOINT_PAGES}`);
    db.pragma(`journal_size_limit = ${64 * 1024 * 1024}`);
    db.pragma('busy_timeout = 5000');
    db.pragma('foreign_keys = ON');
    this.db = db;
    this.checkpointer = checkpointer;
    checkpointer?.start();
    this.memories = new SqliteMemoryIndex(db);
    this.tokens = new SqliteTokenRepository(db);
    this.sessions = new SqliteSessionRepository(db);
    this.rateLimits = new SqliteRateLimitRepository(db);
    this.writeIntents = new SqliteWriteIntentRepository(db);
    this.idempotency = new SqliteIdempotencyRepository(db);
    this.audit = new SqliteAuditRepository(db);
    const workers = this.opts.searchWorkers ?? 0;
    if (workers > 0) {
      // The workers start with the first search; until one is ready, searches run on the main thread.
      this.searchPool = new SqliteSearchPool(this.file, workers);
      this.memories.delegateSearches(this.searchPool);
    }
    // A serving process: the vectors load now (~1–2 s at 100,000, then the IVF lists train in a
    // worker, ~30 s of one core) rather than on the main thread during the first vector search,
    // after which every vector search until the lists are ready would scan all the vectors.
    if (this.opts.preloadVectors === true) this.memories.preloadVectors();
  }

  /** The search worker pool, when there is one (tests). */
  searchWorkers(): SqliteSearchPool | undefined {
    return this.searchPool;
  }

  override async ping(): Promise<void> {
    this.handle().prepare('SELECT 1').get();
  }

  override async probe(): Promise<void> {
    const db = this.handle();
    const ok = sqlite('probe', () => {
      db.exec('CREATE TABLE IF NOT EXISTS probe (id TEXT PRIMARY KEY, at INTEGER NOT NULL)');
      const id = `probe-${process.pid}-${Date.now()}`;
      db.prepare('INSERT INTO probe (id, at) VALUES (?, ?)').run(id, Date.now());
      const row = db.prepare('SELECT id FROM probe WHERE id = ?').get(id);
      db.prepare('DELETE FROM probe WHERE id = ?').run(id);
      return row !== undefined;
    });
    if (!ok) throw new BackendUnavailableError('Document database', 'SQLite probe failed: probe row was not read back');
  }

  override describe(): string {
    return `embedded SQLite at ${this.file}`;
  }

  override async close(): Promise<void> {
    this.memories?.delegateSearches(null);
    this.memories?.stopMaintenance();
    await this.searchPool?.close();
    this.searchPool = undefined;
    await this.checkpointer?.close();
    this.checkpointer = undefined;
    if (this.db?.open) this.db.close();
  }

  private handle(): Database.Database {
    if (!this.db?.open) throw new BackendUnavailableError('Document database', 'the embedded database is closed');
    return this.db;
  }
}
