/**
 * The vector storage contract on both MemoryIndex adapters: embedded SQLite and the
 * MongoDB-wire server of the global setup (FerretDB, or MONGODB_URI).
 */
import Database from 'better-sqlite3';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { MongoDocumentDatabase } from '../../src/backends/mongodb/mongo-document-database';
import { SqliteMemoryIndex } from '../../src/backends/sqlite/sqlite-memory-index';
import { tempDir } from '../support/app';
import { freshDatabaseName, testMongoUri } from '../support/backends';
import { vectorIndexContract } from './vector-index.contract';

vectorIndexContract('SQLite (embedded)', async () => {
  const dir = tempDir('memstore-vectors-');
  const db = new Database(path.join(dir, 'memstore.db'));
  db.pragma('journal_mode = WAL');
  db.pragma('foreign_keys = ON');
  return {
    index: new SqliteMemoryIndex(db, { maintenanceIdleMs: null }),
    cleanup: async () => {
      db.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
});

const uri = testMongoUri();
if (uri) {
  vectorIndexContract('MongoDB adapter', async () => {
    const db = new MongoDocumentDatabase({ uri, dbName: freshDatabaseName(), memoryCollection: null, logger: { log: () => undefined, warn: () => undefined } });
    await db.init();
    return {
      index: db.memories,
      async cleanup() {
        const m = await db.ready();
        await m.memories.db.dropDatabase().catch(() => undefined);
        await db.close();
      },
    };
  });
} else {
  describe('vector storage contract on MongoDB', () => {
    it('needs a MongoDB-wire server (none was started: see the global setup output)', () => {
      expect(uri).toBeNull();
    });
  });
}
