import Database from 'better-sqlite3';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { FilesystemObjectStore } from '../../src/backends/filesystem/filesystem-object-store';
import { SqliteMemoryIndex, SqliteMemoryIndexOptions } from '../../src/backends/sqlite/sqlite-memory-index';
import { tempDir } from '../support/app';
import { memoryIndexContract } from './memory-index.contract';
import { objectStoreContract } from './object-store.contract';

function sqliteIndex(opts: SqliteMemoryIndexOptions) {
  return async () => {
    const dir = tempDir('memstore-index-');
    const db = new Database(path.join(dir, 'memstore.db'));
    db.pragma('journal_mode = WAL');
    db.pragma('foreign_keys = ON');
    return {
      index: new SqliteMemoryIndex(db, opts),
      cleanup: async () => {
        db.close();
        fs.rmSync(dir, { recursive: true, force: true });
      },
    };
  };
}

// Small result sets are ranked by bm25 ...
memoryIndexContract('SQLite FTS5 (embedded, bm25 for small result sets)', sqliteIndex({}));
// ... large ones term by term: the same rules must hold there.
memoryIndexContract('SQLite FTS5 (embedded, term-by-term ranking)', sqliteIndex({ exactRankingBudget: 0 }));

objectStoreContract('filesystem (embedded)', async () => {
  const dir = tempDir('memstore-objects-');
  return {
    store: new FilesystemObjectStore(path.join(dir, 'objects'), Buffer.alloc(32, 1)),
    cleanup: async () => fs.rmSync(dir, { recursive: true, force: true }),
  };
});
