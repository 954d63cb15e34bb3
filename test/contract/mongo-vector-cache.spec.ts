/**
 * The MongoDB adapter's in-process vector copy (src/backends/mongodb/mongo-vector-cache.ts) on the
 * MongoDB-wire server of the global setup (FerretDB, or MONGODB_URI): every memory is searchable
 * by meaning, not only the newest ones; vectors stored and memories deleted by another instance
 * on the same database are seen; filters hold; a new vector space starts afresh; a serving
 * instance loads the copy when it connects.
 */
import { rankCandidates } from '../../src/memories/search/relevance';
import { MongoDocumentDatabase } from '../../src/backends/mongodb/mongo-document-database';
import { fromVector } from '../../src/backends/mongodb/mongo-vector-codec';
import type { MemoryDoc, MemoryFilter } from '../../src/backends/ports/memory.model';
import { freshDatabaseName, testMongoUri } from '../support/backends';
import { memoryDoc } from './memory-index.contract';
import { noiseVector } from '../support/vectors';

const uri = testMongoUri();
const DIMS = 16;
const KEY = 'test:unit-16';
const quiet = { log: () => undefined, warn: () => undefined };

/** A unit vector along axis `a`, leaning by `lean` towards axis `b`. */
function axis(a: number, lean = 0, b = DIMS - 1): Float32Array {
  const v = new Float32Array(DIMS);
  v[a] = 1;
  v[b] += lean;
  const n = Math.hypot(...v);
  return v.map((x) => x / n);
}

/** A seeded vector with nothing on axes 0..7 (far from every query of these tests). */
const noise = (i: number): Float32Array => noiseVector(i, DIMS);

const T0 = Date.parse('2025-01-01T00:00:00Z');
function doc(n: number, over: Partial<MemoryDoc> = {}): MemoryDoc {
  const id = (0x6a000000 + n).toString(16).padStart(24, '0');
  return memoryDoc({ id, title: `note ${n}`, project: 'p', content: `content of note ${n}`, createdAt: new Date(T0 + n * 60_000), ...over });
}

if (uri)
  describe('MongoDB in-process vector copy', () => {
    let dbName: string;
    let a: MongoDocumentDatabase;
    let b: MongoDocumentDatabase;

    /** Writes memories with their vectors as storeVector leaves them (`stamped`: with vec_at; without, as before it existed), sized as the release writes them. */
    async function seed(db: MongoDocumentDatabase, docs: Array<[MemoryDoc, Float32Array]>, stamped = true, key = KEY): Promise<void> {
      const m = await db.ready();
      for (let i = 0; i < docs.length; i += 500) {
        await m.memories.collection.insertMany(
          docs.slice(i, i + 500).map(([d, v]) => {
            const { id, ...rest } = d;
            return { _id: id, ...rest, size: Buffer.byteLength(rest.content), objectKey: null, author: null, vec: fromVector(v), vec_model: key, ...(stamped ? { vec_at: Date.now() } : {}) } as never;
          }),
        );
      }
    }

    /** A semantic search's page: the adapter's candidates, ranked above it as the service does (no floor). */
    const search = async (db: MongoDocumentDatabase, vector: Float32Array, limit = 5, filter: Omit<MemoryFilter, 'namespace'> = {}, key = KEY) => {
      const res = await db.memories.search({ text: 'anything', filter: { namespace: 'default', ...filter }, limit, offset: 0, mode: 'semantic', vector, vectorKey: key });
      return { rows: (await rankCandidates(res.candidates ?? { list: [], docs: 0, df: [] }, { mode: 'semantic', text: 'anything', floor: 0 })).rows.slice(0, limit).map((r) => r.row) };
    };

    beforeEach(async () => {
      dbName = freshDatabaseName();
      a = new MongoDocumentDatabase({ uri: uri, dbName, memoryCollection: null, logger: quiet });
      b = new MongoDocumentDatabase({ uri: uri, dbName, memoryCollection: null, logger: quiet });
      await a.init();
      await b.init();
      await a.memories.useVectorSpace(KEY);
    });
    afterEach(async () => {
      const m = await a.ready();
      await m.memories.db.dropDatabase().catch(() => undefined);
      await a.close();
      await b.close();
    });

    it('finds the OLDEST of 2,500 memories by meaning (no newest-N cap), vectors stored before vec_at existed included', async () => {
      const docs: Array<[MemoryDoc, Float32Array]> = [[doc(0, { title: 'the oldest' }), axis(0)]];
      for (let n = 1; n < 2500; n++) docs.push([doc(n), noise(n)]);
      await seed(a, docs, false);
      const page = await search(a, axis(0, 0.05));
      expect(page.rows[0]?.id).toBe(docs[0][0].id);
      expect(page.rows[0]?.title).toBe('the oldest');
      expect(page.rows).toHaveLength(5);
      expect(a.memories.vectorCache.size).toBe(2500);
      // The same memory through the duplicate hint path.
      expect((await a.memories.similar(axis(0), KEY, 3, { namespace: 'default' }))[0]).toEqual({ id: docs[0][0].id, title: 'the oldest', score: 1 });
      // Deleted by another instance: a big namespace's lookup (not scored from the server) meets
      // its slot behind the filter, never returns it, and frees it.
      expect((await b.memories.remove('default', docs[0][0].id)).status).toBe('ok');
      expect((await a.memories.similar(axis(0), KEY, 3, { namespace: 'default' })).map((s) => s.id)).not.toContain(docs[0][0].id);
      expect(a.memories.vectorCache.size).toBe(2499);
    }, 120_000);

    it('finds, within one search, a vector another instance stored after the copy was loaded', async () => {
      await seed(
        a,
        [1, 2, 3].map((n) => [doc(n), noise(n)]),
      );
      expect((await search(a, axis(2))).rows.map((r) => r.id)).not.toContain(doc(9).id);
      const late = doc(9, { title: 'stored by b' });
      await b.memories.insert(late);
      const jobs = await b.memories.claimEmbeddingJobs('b', 10, 60_000);
      expect(jobs.map((j) => j.id)).toEqual([late.id]);
      await b.memories.storeVector(jobs[0], KEY, axis(2));
      const page = await search(a, axis(2));
      expect(page.rows[0]).toMatchObject({ id: late.id, title: 'stored by b' });
      // No vector written since: the next search reads the write count only, not the stored vectors.
      const finds = jest.spyOn((await a.ready()).memories.collection, 'find');
      expect((await search(a, axis(2))).rows[0]).toMatchObject({ id: late.id });
      expect(finds.mock.calls.filter(([f]) => f && typeof f === 'object' && 'vec_at' in f)).toHaveLength(0);
      finds.mockRestore();
    });

    it('never returns a memory another instance deleted, and still fills the page', async () => {
      // Eight memories close to axis 3 (the lower n, the closer), and noise.
      const near = [1, 2, 3, 4, 5, 6, 7, 8].map((n): [MemoryDoc, Float32Array] => [doc(n), axis(3, n / 10)]);
      await seed(a, [...near, ...[20, 21, 22].map((n): [MemoryDoc, Float32Array] => [doc(n), noise(n)])]);
      expect((await search(a, axis(3))).rows.map((r) => r.id)).toEqual(near.slice(0, 5).map(([d]) => d.id));
      expect((await b.memories.remove('default', doc(1).id)).status).toBe('ok');
      expect((await b.memories.remove('default', doc(3).id)).status).toBe('ok');
      const page = await search(a, axis(3));
      expect(page.rows.map((r) => r.id)).toEqual([2, 4, 5, 6, 7].map((n) => doc(n).id));
      // A namespaced search of a small namespace scores its own vectors exactly (decision 0100): it
      // never sees the copy's stale slots, so only a local delete frees one at once (below).
      // The duplicate hint path too.
      expect((await b.memories.remove('default', doc(2).id)).status).toBe('ok');
      expect((await a.memories.similar(axis(3), KEY, 4, { namespace: 'default' })).map((s) => s.id)).toEqual([4, 5, 6, 7].map((n) => doc(n).id));
      // A local delete frees the slot at once.
      const held = a.memories.vectorCache.size;
      expect((await a.memories.remove('default', doc(4).id)).status).toBe('ok');
      expect(a.memories.vectorCache.size).toBe(held - 1);
      expect((await search(a, axis(3), 3)).rows.map((r) => r.id)).toEqual([5, 6, 7].map((n) => doc(n).id));
    });

    it('honours type, project and tags filters (the ids the server lets through)', async () => {
      // The closest vectors are in project "other"; a weaker match carries the filtered fields.
      const rows: Array<[MemoryDoc, Float32Array]> = [
        [doc(1, { project: 'other' }), axis(4)],
        [doc(2, { project: 'other', tags: ['x'] }), axis(4, 0.1)],
        [doc(3, { project: 'mine', tags: ['x', 'y'], type: 'decision' }), axis(4, 0.5)],
        [doc(4, { project: 'mine', tags: ['y'] }), axis(4, 0.7)],
        [doc(5, { project: 'mine', tags: ['x'] }), noise(5)],
      ];
      await seed(a, rows);
      const ids = async (f: Omit<MemoryFilter, 'namespace'>) => (await search(a, axis(4), 10, f)).rows.map((r) => r.id);
      expect(await ids({ project: 'mine' })).toEqual([3, 4, 5].map((n) => doc(n).id));
      expect(await ids({ tags: ['x'] })).toEqual([2, 3, 5].map((n) => doc(n).id));
      expect(await ids({ type: 'decision' })).toEqual([doc(3).id]);
      expect(await ids({ project: 'mine', tags: ['y'] })).toEqual([3, 4].map((n) => doc(n).id));
      expect(await ids({ project: 'nobody' })).toEqual([]);
      expect((await a.memories.similar(axis(4), KEY, 1, { namespace: 'default', project: 'mine' })).map((s) => s.id)).toEqual([doc(3).id]);
      // A quoted phrase no longer filters a semantic search (decision 0120): every candidate comes back, the phrase's memory among them.
      const page = await a.memories.search({ text: '"note 4"', filter: { namespace: 'default' }, limit: 10, offset: 0, mode: 'semantic', vector: axis(4), vectorKey: KEY });
      expect(page.candidates?.list.map((c) => c.row.id).sort()).toEqual([1, 2, 3, 4, 5].map((n) => doc(n).id).sort());
      expect(page.candidates?.list.find((c) => c.row.id === doc(4).id)?.phrases).toEqual([0]);
    });

    it('a serving instance (preloadVectors) holds the space’s vectors once connected, before any search; others load them on their first vector search', async () => {
      await seed(
        a,
        Array.from({ length: 300 }, (_, n) => [doc(n), noise(n)] as [MemoryDoc, Float32Array]),
      );
      const serving = new MongoDocumentDatabase({ uri: uri, dbName, memoryCollection: null, logger: quiet, preloadVectors: true });
      const command = new MongoDocumentDatabase({ uri: uri, dbName, memoryCollection: null, logger: quiet });
      try {
        await serving.init();
        await command.init();
        await serving.whenVectorsLoaded();
        await command.whenVectorsLoaded();
        expect(serving.memories.vectorCache.size).toBe(300);
        expect(command.memories.vectorCache.size).toBe(0);
        await search(command, axis(0));
        expect(command.memories.vectorCache.size).toBe(300);
      } finally {
        await serving.close();
        await command.close();
      }
    });

    it('starts afresh on a new vector space', async () => {
      await seed(a, [[doc(1), axis(5)]]);
      expect((await search(a, axis(5))).rows.map((r) => r.id)).toEqual([doc(1).id]);
      expect(a.memories.vectorCache.size).toBe(1);
      const OTHER = 'test:other-16';
      expect(await a.memories.useVectorSpace(OTHER)).toBe(true);
      expect(a.memories.vectorCache.size).toBe(0);
      // Nothing is in the new space until re-embedded.
      expect((await search(a, axis(5), 5, {}, OTHER)).rows).toEqual([]);
      const jobs = await a.memories.claimEmbeddingJobs('a', 10, 60_000);
      expect(jobs.map((j) => j.id)).toEqual([doc(1).id]);
      await a.memories.storeVector(jobs[0], OTHER, axis(6));
      expect((await search(a, axis(6), 5, {}, OTHER)).rows.map((r) => r.id)).toEqual([doc(1).id]);
      // Asking for the old key again (another instance still on it) reloads that space's copy.
      expect((await search(a, axis(6))).rows).toEqual([]);
    });
  });
else {
  describe('MongoDB in-process vector copy', () => {
    it('needs a MongoDB-wire server (none was started: see the global setup output)', () => {
      expect(uri).toBeNull();
    });
  });
}
