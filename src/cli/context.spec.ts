import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { vectorsHeld } from '../../test/support/sqlite-vectors';
import { wheelDoc } from '../../test/support/word-wheel';
import { BackendsService } from '../backends/backends.service';
import { DefaultBackendFactory } from '../backends/default-backend-factory';
import { SqliteDocumentDatabase } from '../backends/sqlite/sqlite-database';
import { SettingsService } from '../config/settings.service';
import { withApp } from './context';

describe('memstore commands (withApp)', () => {
  let dir: string;

  beforeEach(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'memstore-cli-'));
    const db = new SqliteDocumentDatabase(path.join(dir, 'memstore.db'));
    await db.init();
    await db.memories.insertMany(Array.from({ length: 40 }, (_, i) => wheelDoc(i, { idBase: 0x68000000, stride: 3, titleEvery: 5 })));
    await db.embeddings.useVectorSpace('local:cli-test');
    for (const job of await db.embeddings.claimEmbeddingJobs('test', 100, 60_000)) await db.embeddings.storeVector(job, 'local:cli-test', Float32Array.from([0.6, 0.8]));
    await db.close();
  });

  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('open the embedded database without loading its vectors, which the server loads at start', async () => {
    const env = { MEMSTORE_DATA_DIR: dir, MEMSTORE_SECRET_KEY: 'cli-test-secret-key-0123456789abcdef', MEMSTORE_LOG_LEVEL: 'silent', MEMSTORE_EMBEDDING_PROVIDER: 'local' };
    await withApp(env, async (app, cfg) => {
      expect(vectorsHeld(app.get(BackendsService).current()?.db)).toBe(0);
      // The server's factory, with the same settings and the same worker count, loads all 40.
      const settings = app.get(SettingsService);
      const serving = new DefaultBackendFactory({ ...cfg, loadVectorsAtStart: true }, settings).createDocumentDatabase(settings.current());
      await serving.init();
      try {
        expect(vectorsHeld(serving)).toBe(40);
      } finally {
        await serving.close();
      }
    });
  });
});
