import Database from 'better-sqlite3';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { SqliteIdempotencyRepository } from '../../src/backends/sqlite/sqlite-idempotency.repository';
import { SqliteAuditRepository } from '../../src/backends/sqlite/sqlite-audit.repository';
import { SqliteRateLimitRepository } from '../../src/backends/sqlite/sqlite-rate-limit.repository';
import { SqliteSessionRepository } from '../../src/backends/sqlite/sqlite-session.repository';
import { SqliteTokenRepository } from '../../src/backends/sqlite/sqlite-token.repository';
import { SqliteWriteIntentRepository } from '../../src/backends/sqlite/sqlite-write-intent.repository';
import { BackendUnavailableError } from '../../src/common/errors';
import { tempDir } from '../support/app';
import { idempotencyRepositoryContract, writeIntentRepositoryContract } from './integrity-repositories.contract';
import { auditRepositoryContract } from './audit-repository.contract';
import { rateLimitRepositoryContract } from './rate-limit-repository.contract';
import { sessionFactory, sessionRepositoryContract } from './session-repository.contract';
import { tokenFactory, tokenRepositoryContract } from './token-repository.contract';

function openDb(): { db: Database.Database; dir: string; cleanup(): Promise<void> } {
  const dir = tempDir('memstore-sqlite-repo-');
  const db = new Database(path.join(dir, 'memstore.db'));
  db.pragma('journal_mode = WAL');
  return {
    db,
    dir,
    async cleanup() {
      if (db.open) db.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

tokenRepositoryContract('sqlite', async () => {
  const { db, cleanup } = openDb();
  return { repo: new SqliteTokenRepository(db), cleanup };
});

sessionRepositoryContract('sqlite', async () => {
  const { db, cleanup } = openDb();
  return { repo: new SqliteSessionRepository(db), cleanup };
});

auditRepositoryContract('sqlite', async () => {
  const { db, cleanup } = openDb();
  return { repo: new SqliteAuditRepository(db), cleanup };
});

rateLimitRepositoryContract('sqlite', async () => {
  const { db, dir, cleanup } = openDb();
  // A second connection to the same file, as another process on the same data directory would have.
  const other = new Database(path.join(dir, 'memstore.db'));
  other.pragma('busy_timeout = 5000');
  return {
    repo: new SqliteRateLimitRepository(db),
    peer: new SqliteRateLimitRepository(other),
    async cleanup() {
      other.close();
      await cleanup();
    },
  };
});

writeIntentRepositoryContract('sqlite', async () => {
  const { db, cleanup } = openDb();
  return { repo: new SqliteWriteIntentRepository(db), cleanup };
});

idempotencyRepositoryContract('sqlite', async () => {
  const { db, cleanup } = openDb();
  return { repo: new SqliteIdempotencyRepository(db), cleanup };
});

describe('SQLite token and session repositories (adapter specifics)', () => {
  it('keep their rows in the database file across a reopen', async () => {
    const { db, dir, cleanup } = openDb();
    const t = tokenFactory();
    const s = sessionFactory();
    await new SqliteTokenRepository(db).create(t);
    await new SqliteSessionRepository(db).set(s);
    db.close();
    const again = new Database(path.join(dir, 'memstore.db'));
    try {
      expect(await new SqliteTokenRepository(again).findById(t.id)).toEqual(t);
      expect(await new SqliteSessionRepository(again).get(s.sid)).toEqual(s);
    } finally {
      again.close();
      await cleanup();
    }
  });

  it('translate a closed database into BackendUnavailableError naming the document database', async () => {
    const { db, cleanup } = openDb();
    const tokens = new SqliteTokenRepository(db);
    const sessions = new SqliteSessionRepository(db);
    db.close();
    const err = await tokens.findById('0123456789abcdef').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BackendUnavailableError);
    expect((err as Error).message).toMatch(/^Document database unavailable: /);
    await expect(tokens.list()).rejects.toBeInstanceOf(BackendUnavailableError);
    await expect(sessions.get('x')).rejects.toBeInstanceOf(BackendUnavailableError);
    await expect(sessions.set(sessionFactory())).rejects.toBeInstanceOf(BackendUnavailableError);
    await cleanup();
  });
});
