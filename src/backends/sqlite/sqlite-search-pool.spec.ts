import { Logger } from '@nestjs/common';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { BackendUnavailableError, ConflictError } from '../../common/errors';
import { MemoryDoc, MemoryPage, SearchQuery } from '../ports/memory.model';
import { vectorsHeld } from '../../../test/support/sqlite-vectors';
import { wheelDoc } from '../../../test/support/word-wheel';
import { SqliteDocumentDatabase } from './sqlite-database';
import { translateSqliteError } from './sqlite-errors';
import { IN_FLIGHT, revive, serializeError, SqliteSearchPool } from './sqlite-search-pool';

/**
 * Searches on worker threads (MEMSTORE_SEARCH_WORKERS): the same answers as on the main thread,
 * writes visible to the next search, errors as the main thread would throw them, and no thread
 * left behind on close.
 */
describe('SqliteSearchPool', () => {
  // The pool's warnings (a worker that dies or cannot open the file) are expected here.
  beforeAll(() => jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined));
  afterAll(() => jest.restoreAllMocks());
  const doc = (i: number, extra: Partial<MemoryDoc> = {}): MemoryDoc => wheelDoc(i, { idBase: 0x67000000, stride: 5, titleEvery: 4 }, { project: i % 2 ? 'atlas' : null, ...extra });
  const queries: SearchQuery[] = [
    { text: 'deploy', filter: { namespace: 'default' }, limit: 5, offset: 0 },
    { text: 'cache schema', filter: { namespace: 'default' }, limit: 5, offset: 5 },
    { text: '"the deploy"', filter: { namespace: 'default' }, limit: 20, offset: 0 },
    { text: 'token -queue', filter: { namespace: 'default', project: 'atlas' }, limit: 3, offset: 0 },
    { text: 'budget', filter: { namespace: 'default', since: new Date(Date.UTC(2026, 0, 1, 0, 0, 30)) }, limit: 10, offset: 0 },
    { text: 'the and of', filter: { namespace: 'default' }, limit: 10, offset: 0 },
  ];

  let dir: string;
  let database: SqliteDocumentDatabase;

  const waitReady = async (pool: SqliteSearchPool, n: number) => {
    void pool.start();
    const deadline = Date.now() + 20000;
    while (pool.readyCount() < n && Date.now() < deadline) await new Promise((r) => setTimeout(r, 25));
    expect(pool.readyCount()).toBe(n);
  };

  beforeEach(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'memstore-pool-'));
    database = new SqliteDocumentDatabase(path.join(dir, 'memstore.db'), { searchWorkers: 2 });
    await database.init();
    await database.memories.insertMany(Array.from({ length: 60 }, (_, i) => doc(i)));
  });

  afterEach(async () => {
    await database.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('answers every search as the main thread does, and sees a write made just before', async () => {
    const pool = database.searchWorkers() as SqliteSearchPool;
    expect(pool.workerCount()).toBe(0); // none until the first search
    expect(await database.memories.search(queries[0])).toEqual(database.memories.searchNow(queries[0])); // on the main thread, starting them
    await waitReady(pool, 2);
    for (const q of queries) {
      const delegated = pool.search(q);
      expect(delegated).not.toBeNull();
      expect(await delegated).toEqual(database.memories.searchNow(q));
    }
    // Several in flight at once, spread over both workers.
    const all = await Promise.all(queries.map((q) => database.memories.search(q)));
    expect(all).toEqual(queries.map((q) => database.memories.searchNow(q)));
    // Not a comparison of empty pages: every query finds rows but the one made of stop words.
    expect(all.filter((page) => page.rows.length > 0)).toHaveLength(queries.length - 1);

    await database.memories.insert(doc(1000, { content: 'a zyzzyva appeared' }));
    expect((await database.memories.search({ text: 'zyzzyva', filter: { namespace: 'default' }, limit: 5, offset: 0 })).rows.map((r) => r.id)).toEqual([doc(1000).id]);
    await database.memories.delete('default', doc(1000).id);
    expect((await database.memories.search({ text: 'zyzzyva', filter: { namespace: 'default' }, limit: 5, offset: 0 })).total).toBe(0);
  });

  it("runs vector searches on the workers with the hits of the main thread's one vector index, new vectors included", async () => {
    const KEY = 'local:test-4';
    const unit = (...xs: number[]) => {
      const n = Math.hypot(...xs);
      return Float32Array.from(xs, (x) => x / n);
    };
    await database.memories.useVectorSpace(KEY);
    const jobs = await database.memories.claimEmbeddingJobs('test', 100, 60_000);
    expect(jobs).toHaveLength(60);
    for (const [i, j] of jobs.entries()) await database.memories.storeVector(j, KEY, unit(1, (i % 7) / 7, (i % 5) / 5, 0.1));
    const pool = database.searchWorkers() as SqliteSearchPool;
    await waitReady(pool, 2);
    const vq = (text: string, vector: Float32Array, mode: 'semantic' | 'hybrid', filter = {}): SearchQuery => ({
      text,
      filter: { namespace: 'default', ...filter },
      limit: 5,
      offset: 0,
      mode,
      vector,
      vectorKey: KEY,
    });
    const vqs = [vq('deploy', unit(1, 0.5, 0.2, 0.1), 'hybrid'), vq('cache', unit(0.2, 1, 0, 0), 'semantic'), vq('token', unit(1, 0, 1, 0), 'hybrid', { project: 'atlas' })];
    const onPool = jest.spyOn(pool, 'search');
    for (const q of vqs) {
      // Candidates for the ranking above the adapters (src/memories/search/relevance.ts).
      const page = await database.memories.search(q);
      expect(page.candidates?.list.length).toBeGreaterThanOrEqual(5);
      // The same page as the main thread's own search.
      database.memories.delegateSearches(null);
      expect(page).toEqual(await database.memories.search(q));
      database.memories.delegateSearches(pool);
    }
    expect(onPool.mock.results.map((r) => r.value === null)).toEqual([false, false, false]);
    // Duplicate hints (on the main thread): the closest memories, filtered like a search.
    for (const [vector, filter] of [
      [unit(1, 0.5, 0.2, 0.1), {}],
      [unit(1, 0, 1, 0), { project: 'atlas' }],
    ] as const) {
      const hits = await database.memories.similar(vector, KEY, 3, { namespace: 'default', ...filter });
      expect(hits).toHaveLength(3);
      for (const h of hits) if ('project' in filter) expect((await database.memories.get('default', h.id))?.project).toBe('atlas');
    }
    // A vector stored just before is found by the next search on a worker (the copy is the main thread's).
    await database.memories.insert(doc(2000, { content: 'nothing alike' }));
    const [job] = await database.memories.claimEmbeddingJobs('test', 10, 60_000);
    await database.memories.storeVector(job, KEY, unit(0, 0, 0, 1));
    const nearest = (p: MemoryPage) => [...(p.candidates?.list ?? [])].sort((a, b) => (b.cosine ?? 0) - (a.cosine ?? 0))[0];
    const page = await database.memories.search(vq('nothing', unit(0, 0, 0, 1), 'semantic'));
    expect(nearest(page).row).toMatchObject({ id: doc(2000).id });
    expect(nearest(page).cosine).toBeCloseTo(1, 5);
    expect((await database.memories.similar(unit(0, 0, 0, 1), KEY, 1, { namespace: 'default' }))[0]).toMatchObject({ id: doc(2000).id, title: doc(2000).title });
    // The memory with the newest vector deleted, then another one's vector stored (SQLite gives the
    // new memory the deleted one's seq): the next search uses the new vector, not the deleted one's.
    await database.memories.delete('default', doc(2000).id);
    await database.memories.insert(doc(2001, { content: 'nothing alike either' }));
    const [next] = await database.memories.claimEmbeddingJobs('test', 10, 60_000);
    await database.memories.storeVector(next, KEY, unit(0, 0, 1, 1));
    const after = await database.memories.search(vq('nothing', unit(0, 0, 1, 1), 'semantic'));
    expect(nearest(after).row).toMatchObject({ id: doc(2001).id });
    expect(nearest(after).cosine).toBeCloseTo(1, 5);
    expect(after.candidates?.list.some((c) => c.row.id === doc(2000).id)).toBe(false);
  });

  it('loads the stored vectors at open only in a serving process whose embedding provider will search them, with or without search workers', async () => {
    const KEY = 'local:test-2';
    await database.memories.useVectorSpace(KEY);
    for (const j of await database.memories.claimEmbeddingJobs('test', 100, 60_000)) await database.memories.storeVector(j, KEY, Float32Array.from([0.6, 0.8]));
    await database.close();
    const loaded = async (searchWorkers: number, preloadVectors?: boolean) => {
      const reopened = new SqliteDocumentDatabase(database.file, { searchWorkers, preloadVectors });
      await reopened.init();
      try {
        return vectorsHeld(reopened);
      } finally {
        await reopened.close();
      }
    };
    expect(await loaded(1, true)).toBe(60); // a serving process with a provider
    expect(await loaded(0, true)).toBe(60); // the same on one core, where it searches on its main thread
    expect(await loaded(0, false)).toBe(0); // provider none: nothing loaded, no lists trained
    expect(await loaded(2)).toBe(0); // a command, a backup: nothing loaded, whatever MEMSTORE_SEARCH_WORKERS says
    database = new SqliteDocumentDatabase(database.file); // for afterEach
    await database.init();
  });

  it('closes its workers with the database; searches after that fail as on a closed database', async () => {
    const pool = database.searchWorkers() as SqliteSearchPool;
    await waitReady(pool, 2);
    const inFlight = queries.map((q) => database.memories.search(q));
    await database.close();
    expect(pool.workerCount()).toBe(0);
    expect(pool.search(queries[0])).toBeNull();
    // In flight at close: answered, or refused with the 503 of a closed database.
    for (const r of await Promise.allSettled(inFlight)) {
      if (r.status === 'rejected') expect(r.reason).toBeInstanceOf(BackendUnavailableError);
    }
    await expect(database.memories.search(queries[0])).rejects.toBeInstanceOf(BackendUnavailableError);
  });

  it('fails the searches of a worker that dies with a 503, searches on the main thread meanwhile, and replaces it', async () => {
    const pool = database.searchWorkers() as SqliteSearchPool;
    await waitReady(pool, 2);
    const slots = [...(pool as unknown as { slots: Set<{ worker: { terminate(): Promise<number> } }> }).slots];
    const inFlight = Promise.all(queries.map((q) => database.memories.search(q)));
    await Promise.all(slots.map((s) => s.worker.terminate()));
    await inFlight.then(
      (pages) => expect(pages).toEqual(queries.map((q) => database.memories.searchNow(q))), // all answered before the exit
      (e) => expect(e).toBeInstanceOf(BackendUnavailableError),
    );
    expect(pool.readyCount()).toBe(0);
    expect(await database.memories.search(queries[1])).toEqual(database.memories.searchNow(queries[1])); // main thread
    await waitReady(pool, 2); // replaced after a second
    expect(await pool.search(queries[2])).toEqual(database.memories.searchNow(queries[2]));
  });

  it('gives each worker IN_FLIGHT searches at a time from one queue, so a worker that dies fails only the ones it held', async () => {
    const pool = database.searchWorkers() as SqliteSearchPool;
    await waitReady(pool, 2);
    const internals = pool as unknown as { slots: Set<{ pending: Map<number, unknown>; worker: { terminate(): Promise<number> } }>; queue: unknown[] };
    const many = Array.from({ length: 30 }, (_, i) => queries[i % queries.length]);
    const sent = many.map((q) => pool.search(q) as Promise<unknown>);
    const slots = [...internals.slots];
    expect(slots.map((s) => s.pending.size)).toEqual([IN_FLIGHT, IN_FLIGHT]);
    expect(internals.queue).toHaveLength(30 - 2 * IN_FLIGHT);
    await slots[0].worker.terminate();
    const settled = await Promise.allSettled(sent);
    const failed = settled.filter((r) => r.status === 'rejected');
    expect(failed.length).toBeLessThanOrEqual(IN_FLIGHT);
    for (const r of failed) expect(r.reason).toBeInstanceOf(BackendUnavailableError);
    settled.forEach((r, i) => {
      if (r.status === 'fulfilled') expect(r.value).toEqual(database.memories.searchNow(many[i]));
    });
  });

  it('falls back to the main thread when a worker cannot open the file', async () => {
    const pool = new SqliteSearchPool(path.join(dir, 'missing.db'), 1);
    await pool.start();
    expect(pool.workerCount()).toBe(0);
    expect(pool.search(queries[0])).toBeNull();
    await pool.close();
  });

  it('rebuilds errors as the main thread would have thrown them', () => {
    const unavailable = revive(serializeError(new BackendUnavailableError('Document database', 'SQLite error: disk I/O error')));
    expect(unavailable).toBeInstanceOf(BackendUnavailableError);
    expect(unavailable).toMatchObject({ status: 503, message: 'Document database unavailable: SQLite error: disk I/O error' });
    const driver = Object.assign(new Error('no such table: memories_fts'), { name: 'SqliteError' });
    expect(revive(serializeError(translateSqliteError(driver)))).toMatchObject({ status: 503, message: 'Document database unavailable: SQLite error: no such table: memories_fts' });
    expect(revive(serializeError(new ConflictError('dup')))).toMatchObject({ status: 409, message: 'dup', name: 'ConflictError' });
  });
});
