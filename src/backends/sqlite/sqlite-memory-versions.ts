import type Database from 'better-sqlite3';
import { storedAuthor, type Author, type MemoryDoc, type VersionEntry } from '../ports/memory.model';

/**
 * Versions of memories in the embedded index (issue 9): the `version`, `object_key` and `author`
 * columns of the memories table (added to databases from before versions) and one history row per
 * kept version. History rows go with their memory (ON DELETE CASCADE); the index's write methods
 * call record()/prune() inside their own transaction, so a version and its history entry are
 * written together or not at all.
 */
export function createVersionSchema(db: Database.Database): void {
  const columns = new Set((db.prepare('PRAGMA table_info(memories)').all() as Array<{ name: string }>).map((c) => c.name));
  // Memories from before versions are version 1 with their file at memories/<id>.md (object_key NULL).
  if (!columns.has('version')) db.exec('ALTER TABLE memories ADD COLUMN version INTEGER NOT NULL DEFAULT 1');
  if (!columns.has('object_key')) db.exec('ALTER TABLE memories ADD COLUMN object_key TEXT');
  if (!columns.has('author')) db.exec('ALTER TABLE memories ADD COLUMN author TEXT');
  db.exec(`
    CREATE TABLE IF NOT EXISTS memory_versions (
      id         TEXT NOT NULL REFERENCES memories (id) ON DELETE CASCADE,
      version    INTEGER NOT NULL,
      object_key TEXT NOT NULL,
      title      TEXT,
      size       INTEGER NOT NULL,
      updated_at INTEGER NOT NULL,
      author     TEXT,             -- JSON {kind, id, name}, or NULL
      PRIMARY KEY (id, version)
    ) WITHOUT ROWID;
  `);
}

export const DROP_VERSIONS = 'DROP TABLE IF EXISTS memory_versions;';

interface VersionRow {
  version: number;
  object_key: string;
  title: string | null;
  size: number;
  updated_at: number;
  author: string | null;
}

export function authorJson(a: Author | null | undefined): string | null {
  return a ? JSON.stringify({ kind: a.kind, id: a.id, name: a.name, ...(a.claimed ? { claimed: a.claimed } : {}) }) : null;
}

export function parseAuthor(json: string | null | undefined): Author | null {
  if (!json) return null;
  try {
    return storedAuthor(JSON.parse(json));
  } catch {
    return null;
  }
}

export function entryOf(doc: MemoryDoc): VersionEntry {
  return {
    version: doc.version,
    objectKey: doc.objectKey!,
    title: doc.title,
    size: Buffer.byteLength(doc.content, 'utf8'),
    updatedAt: doc.updatedAt,
    author: doc.author ?? null,
  };
}

/** History rows of one SQLite connection (statements prepared once). */
export class SqliteMemoryVersions {
  private readonly insertStmt: Database.Statement;
  private readonly prunedStmt: Database.Statement;
  private readonly pruneStmt: Database.Statement;
  private readonly keysStmt: Database.Statement;
  private readonly listStmt: Database.Statement;
  private readonly countStmt: Database.Statement;

  constructor(db: Database.Database) {
    this.insertStmt = db.prepare(
      `INSERT OR IGNORE INTO memory_versions (id, version, object_key, title, size, updated_at, author)
       VALUES (@id, @version, @object_key, @title, @size, @updated_at, @author)`,
    );
    this.prunedStmt = db.prepare('SELECT object_key FROM memory_versions WHERE id = ? ORDER BY version DESC LIMIT -1 OFFSET ?').pluck();
    this.pruneStmt = db.prepare('DELETE FROM memory_versions WHERE id = ? AND version <= (SELECT version FROM memory_versions WHERE id = ? ORDER BY version DESC LIMIT 1 OFFSET ?)');
    this.keysStmt = db.prepare('SELECT object_key FROM memory_versions WHERE id = ?').pluck();
    this.listStmt = db.prepare('SELECT version, object_key, title, size, updated_at, author FROM memory_versions WHERE id = ? ORDER BY version DESC LIMIT ? OFFSET ?');
    this.countStmt = db.prepare('SELECT count(*) FROM memory_versions WHERE id = ?').pluck();
  }

  /** Adds the history entry of `doc` (in the caller's transaction). */
  record(doc: MemoryDoc): void {
    if (doc.objectKey) this.add(doc.id, entryOf(doc));
  }

  add(id: string, e: VersionEntry): void {
    this.insertStmt.run({ id, version: e.version, object_key: e.objectKey, title: e.title, size: e.size, updated_at: e.updatedAt.getTime(), author: authorJson(e.author) });
  }

  /** Keeps the newest `keep` entries; returns the object keys of those removed. */
  prune(id: string, keep: number): string[] {
    const n = Math.max(1, keep);
    const released = this.prunedStmt.all(id, n) as string[];
    if (released.length > 0) this.pruneStmt.run(id, id, n);
    return released;
  }

  /** Object keys of every kept version (before a delete). */
  keys(id: string): string[] {
    return this.keysStmt.all(id) as string[];
  }

  list(id: string, limit: number, offset: number): { rows: VersionEntry[]; total: number } {
    const rows = (this.listStmt.all(id, limit, offset) as VersionRow[]).map((r) => ({
      version: r.version,
      objectKey: r.object_key,
      title: r.title,
      size: r.size,
      updatedAt: new Date(r.updated_at),
      author: parseAuthor(r.author),
    }));
    return { rows, total: this.countStmt.get(id) as number };
  }
}
