/**
 * The shared port contracts on the MongoDB adapter, against the MongoDB-wire server the global
 * setup started (FerretDB, or a real MongoDB at MONGODB_URI). Each harness gets its own database.
 */
import { MongoDocumentDatabase } from '../../src/backends/mongodb/mongo-document-database';
import { freshDatabaseName, testMongoIsFerretdb, testMongoUri } from '../support/backends';
import { idempotencyRepositoryContract, writeIntentRepositoryContract } from './integrity-repositories.contract';
import { memoryIndexContract } from './memory-index.contract';
import { auditRepositoryContract } from './audit-repository.contract';
import { rateLimitRepositoryContract } from './rate-limit-repository.contract';
import { sessionRepositoryContract } from './session-repository.contract';
import { tokenRepositoryContract } from './token-repository.contract';

const uri = testMongoUri();
const quiet = { log: () => undefined, warn: () => undefined };

async function openDatabase(dbName = freshDatabaseName()): Promise<{ db: MongoDocumentDatabase; cleanup(): Promise<void> }> {
  const db = new MongoDocumentDatabase({ uri: uri!, dbName, memoryCollection: null, logger: quiet });
  await db.init();
  return {
    db,
    async cleanup() {
      const m = await db.ready();
      await m.memories.db.dropDatabase().catch(() => undefined);
      await db.close();
    },
  };
}

if (!uri) {
  // The global setup printed why ("MongoDB suites: SKIPPED — ..."); with MEMSTORE_REQUIRE_ALL_BACKENDS=1 it failed the run.
  describe('MongoDB contract suites', () => {
    it('need a MongoDB-wire server (none was started: see the global setup output)', () => {
      expect(uri).toBeNull();
    });
  });
} else {
  memoryIndexContract(testMongoIsFerretdb() ? 'MongoDB adapter on FerretDB (regex fallback search)' : 'MongoDB adapter ($text search)', async () => {
    const { db, cleanup } = await openDatabase();
    return { index: db.memories, cleanup };
  });

  tokenRepositoryContract('mongodb', async () => {
    const { db, cleanup } = await openDatabase();
    return { repo: db.tokens, cleanup };
  });

  sessionRepositoryContract('mongodb', async () => {
    const { db, cleanup } = await openDatabase();
    return { repo: db.sessions, cleanup };
  });

  writeIntentRepositoryContract('mongodb', async () => {
    const { db, cleanup } = await openDatabase();
    return { repo: db.writeIntents, cleanup };
  });

  idempotencyRepositoryContract('mongodb', async () => {
    const { db, cleanup } = await openDatabase();
    return { repo: db.idempotency, cleanup };
  });

  auditRepositoryContract('mongodb', async () => {
    const { db, cleanup } = await openDatabase();
    return { repo: db.audit, cleanup };
  });

  rateLimitRepositoryContract('mongodb', async () => {
    const dbName = freshDatabaseName();
    const { db, cleanup } = await openDatabase(dbName);
    const peer = new MongoDocumentDatabase({ uri: uri, dbName, memoryCollection: null, logger: quiet });
    await peer.init();
    return {
      repo: db.rateLimits,
      peer: peer.rateLimits,
      async cleanup() {
        await peer.close();
        await cleanup();
      },
    };
  });
}
