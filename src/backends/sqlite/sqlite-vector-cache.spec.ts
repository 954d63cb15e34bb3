import Database from 'better-sqlite3';
import { createMemorySchema } from './sqlite-memory-schema';
import { StatementCache, Stmt } from './sqlite-memory-rows';
import { defaultRerank, IVF_SHARE, probedLists, REGROUP_AFTER, RERANK_SHARE, VectorCache, VectorSearchOptions } from './sqlite-vector-cache';
import { toBlob } from './sqlite-vectors';
import { CodeTable } from './sqlite-vector-estimate';
import { dotAt, dotsAt, groupByList, nearestList, rng } from './sqlite-vector-ivf';

const DIMS = 384;
const KEY = 'local:test:384';

/** Normal deviates (Box-Muller) from the seeded PRNG. */
function gaussian(r: () => number): Float32Array {
  const v = new Float32Array(DIMS);
  for (let j = 0; j < DIMS; j++) v[j] = Math.sqrt(-2 * Math.log(r() + 1e-12)) * Math.cos(2 * Math.PI * r());
  return unit(v);
}

function unit(v: Float32Array): Float32Array {
  let n = 0;
  for (const x of v) n += x * x;
  n = Math.sqrt(n);
  return v.map((x) => x / n);
}

function mix(parts: Array<[Float32Array, number]>): Float32Array {
  const v = new Float32Array(DIMS);
  for (const [p, w] of parts) for (let j = 0; j < DIMS; j++) v[j] += w * p[j];
  return unit(v);
}

/**
 * Vectors shaped like bge-small's: a strong component common to every text (unrelated texts
 * score ~0.5 cosine), a topic (200 of them) and the text's own part; queries share a topic and
 * the common part, not any one memory.
 */
function corpus(n: number, queries: number, seed = 7): { vectors: Float32Array[]; queries: Float32Array[] } {
  const r = rng(seed);
  const common = gaussian(r);
  const topics = Array.from({ length: 200 }, () => gaussian(r));
  const vectors = Array.from({ length: n }, () => mix([[common, 0.75], [topics[Math.floor(r() * topics.length)], 0.45], [gaussian(r), 0.5]]));
  const qs = Array.from({ length: queries }, () => mix([[common, 0.6], [topics[Math.floor(r() * topics.length)], 0.45], [gaussian(r), 0.6]]));
  return { vectors, queries: qs };
}

describe('VectorCache (quantised pre-filter + exact re-rank, shared buffers)', () => {
  let db: Database.Database;
  let stmt: Stmt;

  beforeEach(() => {
    db = new Database(':memory:');
    createMemorySchema(db);
    const statements = new StatementCache(db);
    stmt = (sql) => statements.get(sql);
  });
  afterEach(() => db.close());

  const store = (vectors: Float32Array[], from = 1) => {
    const ins = db.prepare('INSERT INTO memory_vectors (seq, model, stamp, vec) VALUES (?, ?, ?, ?) ON CONFLICT (seq) DO UPDATE SET model = excluded.model, stamp = excluded.stamp, vec = excluded.vec');
    const stamp = ((db.prepare('SELECT max(stamp) FROM memory_vectors').pluck().get() as number | null) ?? 0) + 1;
    db.transaction(() => vectors.forEach((v, i) => ins.run(from + i, KEY, stamp + i, toBlob(v))))();
  };

  const recallAt10 = (fast: VectorCache, exact: VectorCache, queries: Float32Array[], only: number[] | null = null) => {
    let found = 0;
    for (const q of queries) {
      const truth = new Set(exact.top(q, 10, only, null).map((h) => h.seq));
      found += fast.top(q, 10, only, null).filter((h) => truth.has(h.seq)).length;
    }
    return found / (queries.length * 10);
  };

  it('finds ≥ 0.95 of the exact top 10 through the quantised pass, re-ranking 3 % of 5,000 vectors', () => {
    const { vectors, queries } = corpus(5000, 100);
    store(vectors);
    // The production rule re-ranks 3 % (at least 1,000) at 100,000 memories; here the quantised
    // pass runs at any size and re-ranks the same share, so 150 of the 5,000.
    const fast = new VectorCache({ exactBelow: 0, rerank: (n) => Math.ceil(n * RERANK_SHARE), train: 'off' });
    const exact = new VectorCache({ exactBelow: Infinity });
    fast.refresh(stmt, KEY);
    exact.refresh(stmt, KEY);
    expect(fast.size).toBe(5000);
    const recall = recallAt10(fast, exact, queries);
    expect(recall).toBeGreaterThanOrEqual(0.95);
    // The scores are exact (re-ranked): the first hit is the exact first hit with its cosine.
    for (const q of queries.slice(0, 10)) expect(fast.top(q, 1, null, null)[0]).toEqual(exact.top(q, 1, null, null)[0]);
    // And on a filtered subset (every other memory) above the exact threshold.
    const only = Array.from({ length: 2500 }, (_, i) => 2 * i + 1);
    expect(recallAt10(fast, exact, queries, only)).toBeGreaterThanOrEqual(0.95);
    for (const h of fast.top(queries[0], 10, only, null)) expect(h.seq % 2).toBe(1);
  });

  it('re-ranks at least 1,000 and 3 % of the candidates by default; exact below 10,000', () => {
    expect(defaultRerank(100_000, 10)).toBe(3000);
    expect(defaultRerank(20_000, 10)).toBe(1000);
    const { vectors, queries } = corpus(3000, 20, 11);
    store(vectors);
    const byDefault = new VectorCache();
    const exact = new VectorCache({ exactBelow: Infinity });
    byDefault.refresh(stmt, KEY);
    exact.refresh(stmt, KEY);
    expect(recallAt10(byDefault, exact, queries)).toBe(1);
  });

  it('catches up with new, re-embedded and deleted vectors; a worker reads the same buffers', () => {
    const { vectors, queries } = corpus(1500, 5, 3);
    store(vectors.slice(0, 1000));
    const main = new VectorCache({ exactBelow: 0, rerank: () => 200, train: 'off' });
    main.refresh(stmt, KEY);
    const worker = new VectorCache();
    worker.attach(main.share()!);
    expect(worker.size).toBe(1000);
    store(vectors.slice(1000), 1001);
    // memory 5 re-embedded: it now has the vector of the query itself
    store([queries[0]], 5);
    db.prepare('DELETE FROM memory_vectors WHERE seq = 7').run();
    main.refresh(stmt, KEY);
    // Before the next share the worker still searches what it was given.
    expect(worker.size).toBe(1000);
    const shared = main.share()!;
    expect(shared.data).toBeInstanceOf(SharedArrayBuffer);
    worker.attach(shared);
    expect(main.size).toBe(1499);
    expect(worker.size).toBe(1499);
    const top = worker.top(queries[0], 3, null, null);
    expect(top[0].seq).toBe(5);
    expect(top[0].score).toBeCloseTo(1, 5);
    const cosines = worker.cosines([7, 5], queries[0]);
    expect(cosines.has(7)).toBe(false);
    expect(cosines.get(5)).toBe(top[0].score);
    expect(worker.top(queries[0], 1500, null, null).some((h) => h.seq === 7)).toBe(false);
    // A vector of another space is not searched.
    db.prepare("UPDATE memory_vectors SET model = 'other', stamp = 99999 WHERE seq = 5").run();
    main.refresh(stmt, KEY);
    worker.attach(main.share()!);
    expect(worker.top(queries[0], 1, null, null)[0].seq).not.toBe(5);
  });

  describe('IVF lists (above exactBelow, unfiltered)', () => {
    // 6,000 vectors, exact below 2,000: 1.6 √6000 ≈ 124 lists, the best probed until they hold 20 % of
    // the slots (1,200 candidates), then the quantised pass and the re-rank of 1,000 (as 20 % of
    // 100,000 in production, and its 1,000 re-ranked).
    const opts: VectorSearchOptions = { exactBelow: 2000, probe: (n) => Math.ceil(n * IVF_SHARE), train: 'inline' };

    const trained = (more: VectorSearchOptions = {}) => {
      const fast = new VectorCache({ ...opts, ...more });
      const exact = new VectorCache({ exactBelow: Infinity, train: 'off' });
      fast.refresh(stmt, KEY);
      exact.refresh(stmt, KEY);
      return { fast, exact };
    };

    it('finds ≥ 0.95 of the exact top 10 while comparing about a fifth of the vectors', () => {
      const { vectors, queries } = corpus(6000, 100, 21);
      store(vectors);
      const { fast, exact } = trained();
      expect(fast.index).toEqual({ lists: 124, assigned: 6000, of: 6000 });
      expect(recallAt10(fast, exact, queries)).toBeGreaterThanOrEqual(0.95);
      expect(fast.lastCandidates).toBeGreaterThanOrEqual(1200);
      expect(fast.lastCandidates).toBeLessThan(2000);
      // Exact scores of what it finds.
      for (const q of queries.slice(0, 10)) expect(fast.top(q, 1, null, null)[0]).toEqual(exact.top(q, 1, null, null)[0]);
    });

    it('finds vectors added after the training, never deleted ones; honours only and except', () => {
      const { vectors, queries } = corpus(7000, 30, 22);
      store(vectors.slice(0, 6000));
      const { fast, exact } = trained();
      expect(fast.index?.of).toBe(6000);
      // 1,000 new memories (more than one refresh assigns: the rest are candidates of every search
      // until assigned), and memory 9001 holds a query's own vector.
      store(vectors.slice(6000), 6001);
      store([queries[0]], 9001);
      fast.refresh(stmt, KEY);
      exact.refresh(stmt, KEY);
      expect(fast.index?.of).toBe(6000);
      expect(fast.top(queries[0], 1, null, null)[0]).toEqual({ seq: 9001, score: expect.closeTo(1, 5) });
      expect(recallAt10(fast, exact, queries)).toBeGreaterThanOrEqual(0.95);
      for (let i = 0; i < 3; i++) fast.refresh(stmt, KEY);
      expect(fast.index?.assigned).toBe(7001);
      // Each new vector is found as its own nearest neighbour.
      for (let i = 6000; i < 7000; i += 97) expect(fast.top(vectors[i], 1, null, null)[0].seq).toBe(i + 1);
      expect(recallAt10(fast, exact, queries)).toBeGreaterThanOrEqual(0.95);

      // Deleted: the best hits of a query, and the query's own vector.
      const best = exact.top(queries[1], 5, null, null).map((h) => h.seq);
      db.prepare('DELETE FROM memory_vectors WHERE seq IN (SELECT value FROM json_each(?))').run(JSON.stringify([...best, 9001]));
      db.prepare("UPDATE embedding_meta SET value = value + 1 WHERE key = 'vector_version'").run();
      fast.refresh(stmt, KEY);
      exact.refresh(stmt, KEY);
      const after = fast.top(queries[1], 50, null, null).map((h) => h.seq);
      expect(after.filter((s) => best.includes(s))).toEqual([]);
      expect(fast.top(queries[0], 50, null, null).some((h) => h.seq === 9001)).toBe(false);
      expect(recallAt10(fast, exact, queries)).toBeGreaterThanOrEqual(0.95);

      // except: the exact best hits are left out, the next ones found.
      const top = exact.top(queries[2], 13, null, null).map((h) => h.seq);
      const except = new Set(top.slice(0, 3));
      const got = fast.top(queries[2], 10, null, except).map((h) => h.seq);
      expect(got.some((s) => except.has(s))).toBe(false);
      expect(got.filter((s) => top.slice(3).includes(s)).length).toBeGreaterThanOrEqual(9);
      // only: a filtered subset is searched as before (every candidate, no lists).
      const only = Array.from({ length: 3000 }, (_, i) => 2 * i + 2);
      expect(recallAt10(fast, exact, queries, only)).toBeGreaterThanOrEqual(0.95);
      expect(fast.top(queries[2], 10, only, null).every((h) => h.seq % 2 === 0)).toBe(true);
      expect(fast.lastCandidates).toBe(only.filter((s) => !best.includes(s)).length);
    });

    it('keeps the lists when slots are compacted; retrains when the store doubles, or for another model', () => {
      const { vectors, queries } = corpus(17000, 30, 23);
      store(vectors.slice(0, 6000));
      const { fast, exact } = trained();
      // Half deleted, then more than the buffers hold added: the live slots move (compaction).
      db.prepare('DELETE FROM memory_vectors WHERE seq % 2 = 1').run();
      store(vectors.slice(6000, 8000), 6001);
      fast.refresh(stmt, KEY);
      exact.refresh(stmt, KEY);
      expect(fast.size).toBe(5000);
      expect(fast.index?.of).toBe(6000);
      for (let i = 1; i < 8000; i += 2 * 101) expect(fast.top(vectors[i], 1, null, null)[0].seq).toBe(i + 1);
      expect(recallAt10(fast, exact, queries)).toBeGreaterThanOrEqual(0.95);
      // Doubled since the training (5,000 + 9,000 ≥ 2 × 6,000): new lists.
      store(vectors.slice(8000), 8001);
      fast.refresh(stmt, KEY);
      exact.refresh(stmt, KEY);
      expect(fast.index).toEqual({ lists: 189, assigned: 14000, of: 14000 });
      expect(recallAt10(fast, exact, queries)).toBeGreaterThanOrEqual(0.95);
      // Another model: its vectors, and its own lists.
      const other = corpus(3000, 0, 24).vectors;
      db.prepare('DELETE FROM memory_vectors').run();
      store(other, 1);
      db.prepare("UPDATE memory_vectors SET model = 'local:other:384'").run();
      fast.refresh(stmt, 'local:other:384');
      expect(fast.size).toBe(3000);
      expect(fast.index).toEqual({ lists: 88, assigned: 3000, of: 3000 });
      expect(fast.top(other[5], 1, null, null)[0].seq).toBe(6);
    });

    it('trains in a worker thread (full scan until then); a search worker attached gets the same hits', async () => {
      const { vectors, queries } = corpus(6000, 20, 25);
      store(vectors);
      const main = new VectorCache({ ...opts, train: 'worker' });
      const inline = new VectorCache(opts);
      main.refresh(stmt, KEY);
      inline.refresh(stmt, KEY);
      try {
        // Until the worker is done: every vector is a candidate.
        expect(main.index).toBeNull();
        main.top(queries[0], 10, null, null);
        expect(main.lastCandidates).toBe(6000);
        await main.whenIndexed();
        expect(main.index).toEqual({ lists: 124, assigned: 6000, of: 6000 });
        const reader = new VectorCache(opts);
        reader.attach(main.share()!);
        for (const q of queries) {
          const hits = main.top(q, 10, null, null);
          expect(main.lastCandidates).toBeLessThan(2000);
          // The same lists as trained on this thread (same sample, same seed), and the reader's hits.
          expect(inline.top(q, 10, null, null)).toEqual(hits);
          expect(reader.top(q, 10, null, null)).toEqual(hits);
        }
        // New slots reach the reader with the next share, assigned by the main thread.
        store([queries[3]], 7001);
        main.refresh(stmt, KEY);
        reader.attach(main.share()!);
        expect(reader.top(queries[3], 1, null, null)[0].seq).toBe(7001);
      } finally {
        main.close();
      }
    });

    it('regroups the lists once enough new slots are assigned: same hits on the main thread and on a reader, deleted ones never', () => {
      const { vectors, queries } = corpus(6000 + REGROUP_AFTER + 500, 30, 26);
      store(vectors.slice(0, 6000));
      const { fast, exact } = trained();
      const reader = new VectorCache(opts);
      reader.attach(fast.share()!);
      // More new slots than REGROUP_AFTER (below doubling: no retraining), assigned 512 per refresh.
      store(vectors.slice(6000), 6001);
      exact.refresh(stmt, KEY);
      for (let i = 0; fast.index!.assigned < vectors.length && i < 20; i++) fast.refresh(stmt, KEY);
      expect(fast.index).toEqual({ lists: 124, assigned: vectors.length, of: 6000 });
      // Deleted after the regrouping: still in the lists' copy, never returned.
      const gone = [6001, 6002, 9000, ...exact.top(queries[4], 3, null, null).map((h) => h.seq)];
      db.prepare('DELETE FROM memory_vectors WHERE seq IN (SELECT value FROM json_each(?))').run(JSON.stringify(gone));
      db.prepare("UPDATE embedding_meta SET value = value + 1 WHERE key = 'vector_version'").run();
      fast.refresh(stmt, KEY);
      exact.refresh(stmt, KEY);
      reader.attach(fast.share()!);
      expect(recallAt10(fast, exact, queries)).toBeGreaterThanOrEqual(0.95);
      for (const q of queries) expect(reader.top(q, 10, null, null)).toEqual(fast.top(q, 10, null, null));
      for (let i = 6002; i < vectors.length; i += 211) {
        expect(fast.top(vectors[i], 1, null, null)[0].seq).toBe(i + 1);
        expect(reader.top(vectors[i], 1, null, null)[0].seq).toBe(i + 1);
      }
      for (const seq of gone) expect(fast.top(vectors[seq - 1], 5, null, null).some((h) => h.seq === seq)).toBe(false);
      expect(fast.top(queries[4], 20, null, null).some((h) => gone.includes(h.seq))).toBe(false);
    });
    it('gives the same hits with the quantised pass in WebAssembly as in JavaScript: after a regrouping, with except, on a reader', () => {
      const estimate = jest.spyOn(CodeTable.prototype, 'estimate');
      try {
        const { vectors, queries } = corpus(6000 + REGROUP_AFTER + 300, 40, 27);
        store(vectors.slice(0, 6000));
        // 30 re-ranked of the ~1,200 probed for 20 hits: the estimates choose what is compared exactly.
        const few = { rerank: () => 30 };
        const { fast: wasm } = trained(few);
        const { fast: js } = trained({ ...few, wasm: false });
        const reader = new VectorCache({ ...opts, ...few });
        const same = () => {
          reader.attach(wasm.share()!);
          for (const [i, q] of queries.entries()) {
            const except = i % 4 === 0 ? new Set(js.top(q, 3, null, null).map((h) => h.seq)) : null;
            const hits = js.top(q, 20, null, except);
            expect(hits).toHaveLength(20);
            expect(wasm.top(q, 20, null, except)).toEqual(hits);
            expect(reader.top(q, 20, null, except)).toEqual(hits);
          }
        };
        estimate.mockClear();
        same();
        // Only the WebAssembly caches (the main thread's and the reader's), once per probed list.
        expect(estimate.mock.calls.length).toBeGreaterThanOrEqual(2 * queries.length * 2);
        const calls = estimate.mock.calls.length;
        js.top(queries[0], 20, null, null);
        expect(estimate.mock.calls.length).toBe(calls);
        // New slots, assigned and regrouped (new codes to copy), then some deleted.
        store(vectors.slice(6000), 6001);
        for (let i = 0; i < 20; i++) {
          wasm.refresh(stmt, KEY);
          js.refresh(stmt, KEY);
        }
        expect(wasm.index).toEqual({ lists: 124, assigned: vectors.length, of: 6000 });
        same();
        db.prepare('DELETE FROM memory_vectors WHERE seq % 7 = 0').run();
        db.prepare("UPDATE embedding_meta SET value = value + 1 WHERE key = 'vector_version'").run();
        wasm.refresh(stmt, KEY);
        js.refresh(stmt, KEY);
        same();
      } finally {
        estimate.mockRestore();
      }
    });
  });

  it('groupByList: the live, assigned slots of [0, end) by list, ascending within a list', () => {
    const assign = Int32Array.from([2, 0, -1, 2, 1, 0, 2, 1]);
    const seqs = Int32Array.from([10, 11, 12, -1, 14, 15, 16, 17]);
    const { members, starts } = groupByList(assign, 3, 7, seqs);
    // Slot 2 has no list, slot 3 is free, slot 7 is past the end.
    expect([...starts]).toEqual([0, 2, 3, 5]);
    expect([...members]).toEqual([1, 5, 4, 0, 6]);
  });

  it('dotsAt: dotAt of each slot (or of each vector in order), eight at a time and the rest one by one', () => {
    const random = rng(7);
    const dims = 12;
    const data = Float32Array.from({ length: 20 * dims }, () => random() - 0.5);
    const q = Float32Array.from({ length: dims }, () => random() - 0.5);
    const slots = Int32Array.from([19, 3, 3, 0, 11, 7, 15, 2, 8, 14, 5]);
    const out = new Float32Array(slots.length);
    dotsAt(q, data, slots, slots.length, out);
    expect([...out]).toEqual([...slots].map((i) => Math.fround(dotAt(q, data, i * dims))));
    const first = new Float32Array(10);
    dotsAt(q, data, null, 10, first);
    expect([...first]).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9].map((i) => Math.fround(dotAt(q, data, i * dims))));
    // Distinct vectors give distinct sums (the check above compares something).
    expect(new Set(out).size).toBe(10);
  });

  it('nearestList: the centroid with the largest dot product, the first of equal ones, for any number of lists', () => {
    const random = rng(5);
    const dims = 16;
    for (const lists of [1, 3, 4, 7, 9]) {
      const centroids = Float32Array.from({ length: lists * dims }, () => random() - 0.5);
      const data = Float32Array.from({ length: 40 * dims }, () => random() - 0.5);
      const got = Array.from({ length: 40 }, (_, n) => nearestList(centroids, lists, dims, data, n * dims));
      const best = (n: number) => {
        let c = 0;
        for (let d = 1; d < lists; d++) if (dotAt(data.subarray(n * dims, (n + 1) * dims), centroids, d * dims) > dotAt(data.subarray(n * dims, (n + 1) * dims), centroids, c * dims)) c = d;
        return c;
      };
      expect(got).toEqual(Array.from({ length: 40 }, (_, n) => best(n)));
      if (lists >= 7) expect(new Set(got).size).toBeGreaterThan(3);
    }
    // Two equal centroids: the first.
    const twin = Float32Array.from([0, 1, 1, 0, 1, 0]);
    expect(nearestList(twin, 3, 2, Float32Array.from([1, 0]), 0)).toBe(1);
  });

  it('probedLists: the lists by descending score (equal scores: lower index first) until they hold the budget', () => {
    const random = rng(11);
    // The walk it replaces: every list sorted, taken while less than the budget is held.
    const walk = (scores: Float32Array, sizes: Int32Array, budget: number) => {
      const mark = new Uint8Array(scores.length);
      let held = 0;
      for (const c of Array.from(scores, (_, i) => i).sort((a, b) => scores[b] - scores[a] || a - b)) {
        if (held >= budget) break;
        mark[c] = 1;
        held += sizes[c];
      }
      return [...mark];
    };
    for (let round = 0; round < 40; round++) {
      const n = 1 + Math.floor(random() * 700);
      // Coarse scores (many ties), empty lists, and budgets from none to more than all hold.
      const scores = Float32Array.from({ length: n }, () => Math.round((random() * 2 - 1) * 300) / 100);
      const sizes = Int32Array.from({ length: n }, () => (random() < 0.1 ? 0 : Math.floor(random() * 400)));
      const all = sizes.reduce((a, b) => a + b, 0);
      for (const budget of [0, 1, Math.floor(all * 0.2), Math.floor(all * random()), all, all + 1]) {
        expect([...probedLists(scores, sizes, budget)]).toEqual(walk(scores, sizes, budget));
      }
    }
    expect([...probedLists(Float32Array.from([0.25, 0.75, -0.1, 0.75]), Int32Array.from([5, 5, 5, 5]), 6)]).toEqual([0, 1, 0, 1]);
    expect([...probedLists(Float32Array.from([0.5, 0.5, 0.5]), Int32Array.from([2, 2, 2]), 3)]).toEqual([1, 1, 0]);
  });
});
