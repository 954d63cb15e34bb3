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
import { dot, VectorIndex } from '../../src/backends/vector/vector-index';
import { memoryDoc } from './memory-index.contract';
import { vectorIndexContract } from './vector-index.contract';
import { rankCandidates } from '../../src/memories/search/relevance';

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

// The embedded vector index persists beside the database (decision record 0030).
describe('SQLite vector index file', () => {
  const KEY = 'test:persist-4';
  const unit = (...xs: number[]) => {
    const n = Math.hypot(...xs);
    return Float32Array.from(xs, (x) => x / n);
  };
  const doc = (n: number) => memoryDoc({ id: `persist-${n}`, title: `note ${n}`, content: `content ${n}`, project: n % 2 === 0 ? 'even' : 'odd' });
  let dir: string;
  const open = () => {
    const db = new Database(path.join(dir, 'memstore.db'));
    db.pragma('journal_mode = WAL');
    return { db, index: new SqliteMemoryIndex(db, { maintenanceIdleMs: null }) };
  };
  const close = (o: { db: Database.Database; index: SqliteMemoryIndex }) => {
    o.index.stopMaintenance();
    o.db.close();
  };
  const semantic = (index: SqliteMemoryIndex, vector: Float32Array, filter = {}) =>
    index
      .search({ text: 'anything', filter: { namespace: 'default', ...filter }, limit: 3, offset: 0, mode: 'semantic', vector, vectorKey: KEY })
      .then((p) => rankCandidates(p.candidates ?? { list: [], docs: 0, df: [] }, { mode: 'semantic', text: 'anything', floor: 0 }))
      .then(({ rows }) => rows.slice(0, 3).map((r) => r.row.id));
  const embed = async (index: SqliteMemoryIndex, vectors: (id: string) => Float32Array) => {
    for (const j of await index.claimEmbeddingJobs('spec', 1000, 60_000)) await index.storeVector(j, KEY, vectors(j.id));
  };
  const axisOf = (id: string) => {
    const n = Number(id.split('-')[1]);
    return unit(Math.cos(n / 40), Math.sin(n / 40), n % 3, 1);
  };

  beforeEach(() => {
    dir = tempDir('memstore-vecfile-');
  });
  afterEach(() => {
    jest.restoreAllMocks();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('is saved at close and loaded at open without a rebuild; what changed while closed is caught up from the table', async () => {
    const first = open();
    await first.index.useVectorSpace(KEY);
    await first.index.insertMany(Array.from({ length: 60 }, (_, n) => doc(n)));
    await embed(first.index, axisOf);
    expect(await semantic(first.index, axisOf('persist-7'))).toEqual(expect.arrayContaining(['persist-7']));
    close(first);
    expect(fs.existsSync(path.join(dir, 'memstore.db.vectors'))).toBe(true);

    // While no index is open: one memory deleted, one added with its vector (another process's writes).
    const other = open();
    await other.index.remove('default', 'persist-7');
    await other.index.insert(doc(100));
    await embed(other.index, () => unit(0, 0, 0, 1));
    other.db.close(); // closed without saving: the file is from before these writes

    const built = jest.spyOn(VectorIndex.prototype, 'addMany');
    const again = open();
    const hits = await semantic(again.index, axisOf('persist-7'));
    expect(built).not.toHaveBeenCalled(); // loaded, not rebuilt
    expect(hits).not.toContain('persist-7');
    expect((await semantic(again.index, unit(0, 0, 0, 1)))[0]).toBe('persist-100');
    // A filter never returns fewer than k when k pass.
    expect(await semantic(again.index, axisOf('persist-3'), { project: 'odd' })).toHaveLength(3);
    close(again);
  });

  it('past the exact-scan limit, walks the graph of 16-bit vectors: the nearest first, each scored within 0.001', async () => {
    const db = new Database(path.join(dir, 'memstore.db'));
    db.pragma('journal_mode = WAL');
    const opened = { db, index: new SqliteMemoryIndex(db, { maintenanceIdleMs: null, vectorIndex: { exactMax: 0 } }) };
    await opened.index.useVectorSpace(KEY);
    await opened.index.insertMany(Array.from({ length: 60 }, (_, n) => doc(n)));
    await embed(opened.index, axisOf);
    const q = unit(1, 0.3, 0.5, 1);
    const page = await opened.index.search({ text: 'anything', filter: { namespace: 'default' }, limit: 5, offset: 0, mode: 'semantic', vector: q, vectorKey: KEY });
    const got = (page.candidates?.list ?? []).map((c) => ({ id: c.row.id, cosine: c.cosine as number })).sort((a, b) => b.cosine - a.cosine);
    const want = Array.from({ length: 60 }, (_, n) => ({ id: `persist-${n}`, cosine: dot(q, axisOf(`persist-${n}`)) })).sort((a, b) => b.cosine - a.cosine);
    expect(got.slice(0, 5).map((h) => h.id)).toEqual(want.slice(0, 5).map((h) => h.id));
    for (const h of got) expect(h.cosine).toBeCloseTo(dot(q, axisOf(h.id)), 3);
    close(opened);
  });

  it('is rebuilt from the table when missing or unreadable, with the same answers', async () => {
    const first = open();
    await first.index.useVectorSpace(KEY);
    await first.index.insertMany(Array.from({ length: 30 }, (_, n) => doc(n)));
    await embed(first.index, axisOf);
    const before = await semantic(first.index, axisOf('persist-11'));
    close(first);
    fs.writeFileSync(path.join(dir, 'memstore.db.vectors'), 'not an index');
    const built = jest.spyOn(VectorIndex.prototype, 'addMany');
    const again = open();
    expect(await semantic(again.index, axisOf('persist-11'))).toEqual(before);
    expect(built).toHaveBeenCalled();
    close(again);
  });
});
