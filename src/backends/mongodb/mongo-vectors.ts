import { ALL_NAMESPACES, DEFAULT_NAMESPACE } from '../../namespaces/namespace';
import type { FilterQuery } from 'mongoose';
import { FUSION_CANDIDATES, hasPositiveTerms, matchWords, memoryEmbeddingText, parseSearchQuery, SESSION_GAP_MS, softenPhrases, termMatcher } from '../../../libs/search-query';
import type { EmbeddingJob, EmbeddingProgress, MemoryPage, MemoryRow, SearchCandidate, SearchQuery, SimilarHit } from '../ports/memory.model';
import type { MongoModels } from './mongo-models';
import type { MemoryRecord } from './mongo.schemas';
import { hardRegexFilter } from './regex-search';
import { fromVector, META, toVector, VECTOR_WRITES } from './mongo-vector-codec';
import type { MongoVectorCache, VectorHit } from './mongo-vector-cache';
import { dot } from '../vector/vector-index';

/**
 * Vectors and the embedding queue on MongoDB, inside the memory documents (README "Hybrid
 * search"): `vec` (float32 little-endian, BinData) and `vec_model` (its vector space); a memory
 * waiting for its vector has `emb_pending: true` with `emb_gen` (moves on every change of title
 * or content), `emb_next_at`, `emb_lease_until`/`emb_owner` (a worker's lease), `emb_attempts`
 * and `emb_error`. Jobs are leased one document at a time with findOneAndUpdate, so instances
 * sharing the database never embed the same memory at once.
 *
 * Semantic ranking is the in-process vector index's (mongo-vector-cache.ts, an HNSW graph from
 * src/backends/vector), filtered by asking the server which of its candidates a filter lets through:
 * `$vectorSearch` needs Atlas or MongoDB 8.2+ with mongot and a vector index this service does not
 * create, and FerretDB has none. storeVector sets `vec_at` (ms) so other instances' copies catch up.
 */

/** Fields that put a memory in the embedding queue (on insert, and when its title or content change). */
export function queuedFields(gen = 1): Record<string, unknown> {
  return { emb_pending: true, emb_gen: gen, emb_next_at: 0, emb_lease_until: 0, emb_attempts: 0 };
}

const QUEUE_CLEAR = { emb_pending: '', emb_next_at: '', emb_lease_until: '', emb_owner: '', emb_attempts: '', emb_error: '' };

/** The vector space in use (the key of the last useVectorSpace), if any. */
export async function vectorSpace(m: MongoModels): Promise<string | null> {
  const current = await m.memories.db.collection<{ _id: string; value: string }>(META).findOne({ _id: 'vector_space' });
  return current?.value ?? null;
}

export async function useVectorSpace(m: MongoModels, key: string): Promise<boolean> {
  const meta = m.memories.db.collection<{ _id: string; value: string }>(META);
  const current = await vectorSpace(m);
  if (current === key) return false;
  await meta.updateOne({ _id: 'vector_space' }, { $set: { value: key } }, { upsert: true });
  await m.memories.collection.updateMany({ vec_model: { $ne: key }, emb_pending: { $ne: true } }, { $set: queuedFields(1) });
  return current !== null;
}

export async function claimJobs(m: MongoModels, owner: string, max: number, leaseMs: number): Promise<EmbeddingJob[]> {
  const jobs: EmbeddingJob[] = [];
  const now = Date.now();
  for (let i = 0; i < max; i++) {
    const r = (await m.memories.collection.findOneAndUpdate(
      { emb_pending: true, emb_next_at: { $lte: now }, emb_lease_until: { $lte: now } },
      { $set: { emb_lease_until: now + leaseMs, emb_owner: owner } },
      // No projection: FerretDB does not implement one on findAndModify.
      { returnDocument: 'after', includeResultMetadata: false },
    )) as unknown as {
      _id: string;
      namespace?: string;
      title: string | null;
      content: string;
      type?: string;
      project?: string | null;
      agent?: string | null;
      createdAt: Date;
      emb_gen?: number;
      emb_attempts?: number;
    } | null;
    if (!r) break;
    jobs.push({ id: r._id, text: memoryEmbeddingText(r.title, r.content, await previousContent(m, r)), gen: r.emb_gen ?? 1, attempts: r.emb_attempts ?? 0 });
  }
  return jobs;
}

/**
 * The content of the memory just before `r` in its session (same project and agent, at most
 * SESSION_GAP_MS earlier) when both are conversation turns: memoryEmbeddingText's context.
 */
async function previousContent(m: MongoModels, r: { _id: string; namespace?: string; type?: string; project?: string | null; agent?: string | null; createdAt: Date }): Promise<string | null> {
  if (r.type !== 'conversation') return null;
  const at = new Date(r.createdAt);
  const p = (await m.memories.collection.findOne(
    {
      // A session never crosses namespaces (issue 43): another tenant's text is never this vector's context.
      namespace: r.namespace ?? DEFAULT_NAMESPACE,
      project: r.project ?? null,
      agent: r.agent ?? null,
      createdAt: { $gte: new Date(at.getTime() - SESSION_GAP_MS) },
      $or: [{ createdAt: { $lt: at } }, { createdAt: at, _id: { $lt: r._id } }],
    } as never,
    { projection: { content: 1, type: 1 }, sort: { createdAt: -1, _id: -1 } },
  )) as unknown as { content?: string; type?: string } | null;
  return p?.type === 'conversation' ? (p.content ?? null) : null;
}

export async function storeVector(m: MongoModels, job: EmbeddingJob, key: string, vector: Float32Array): Promise<void> {
  await m.memories.collection.updateOne({ _id: job.id } as never, { $set: { vec: fromVector(vector), vec_model: key, vec_at: Date.now() } });
  // After the vector: a copy that sees the new count finds the vector.
  await m.memories.db.collection<{ _id: string; n: number }>(META).updateOne({ _id: VECTOR_WRITES }, { $inc: { n: 1 } }, { upsert: true });
  await m.memories.collection.updateOne({ _id: job.id, emb_gen: job.gen } as never, { $unset: QUEUE_CLEAR });
}

export async function failJob(m: MongoModels, job: EmbeddingJob, error: string, retryAt: Date): Promise<void> {
  await m.memories.collection.updateOne({ _id: job.id, emb_gen: job.gen } as never, {
    $set: { emb_next_at: retryAt.getTime(), emb_lease_until: 0, emb_error: error.slice(0, 500) },
    $inc: { emb_attempts: 1 },
    $unset: { emb_owner: '' },
  });
}

export async function progress(m: MongoModels, key: string | null): Promise<EmbeddingProgress> {
  const c = m.memories.collection;
  const [pending, failing, embedded, last] = await Promise.all([
    c.countDocuments({ emb_pending: true }),
    c.countDocuments({ emb_pending: true, emb_attempts: { $gt: 0 } }),
    key === null ? Promise.resolve(0) : c.countDocuments({ vec_model: key }),
    c.findOne({ emb_pending: true, emb_error: { $exists: true } } as never, { projection: { emb_error: 1 }, sort: { emb_next_at: -1 } }),
  ]);
  return { pending, failing, embedded, lastError: (last as { emb_error?: string } | null)?.emb_error ?? null };
}

/** Candidates asked of the copy beyond those needed: memories another instance deleted are dropped from a page. */
const SPARE = 16;

/** A filter matching at most this many memories is scored exactly from their documents (no graph walk). */
const EXACT_FILTERED_MAX = 2_000;

/**
 * The best `k` of the filtered memories' vectors of space `key` against `q`, best first: from the
 * vector index, the filter checked by the server for each batch of candidates; a filter matching
 * few memories has them scored exactly from their documents instead.
 */
async function scan(m: MongoModels, cache: MongoVectorCache, q: Float32Array, key: string, filter: FilterQuery<MemoryRecord>, k: number): Promise<VectorHit[]> {
  if (Object.keys(filter).length === 0) {
    await cache.sync(m, key);
    return cache.top(q, k);
  }
  const [, few] = await Promise.all([
    cache.sync(m, key),
    m.memories.collection.find({ ...filter, vec_model: key } as never, { projection: { _id: 1, vec: 1, createdAt: 1 }, limit: EXACT_FILTERED_MAX + 1 }).toArray() as unknown as Promise<
      Array<{ _id: string; vec: unknown; createdAt: Date }>
    >,
  ]);
  if (few.length <= EXACT_FILTERED_MAX) {
    const hits: VectorHit[] = [];
    for (const d of few) {
      const v = toVector(d.vec);
      if (v && v.length === q.length) hits.push({ id: d._id, score: dot(q, v), order: new Date(d.createdAt).getTime() });
    }
    return hits.sort((a, b) => b.score - a.score || b.order - a.order).slice(0, k);
  }
  const idsOf = async (where: Record<string, unknown>) =>
    new Set(((await m.memories.collection.find(where as never, { projection: { _id: 1 } }).toArray()) as unknown as Array<{ _id: string }>).map((d) => d._id));
  return cache.top(q, k, async (ids) => {
    const [passed, held] = await Promise.all([idsOf({ ...filter, _id: { $in: ids } }), idsOf({ _id: { $in: ids } })]);
    // A candidate whose document is gone was deleted by another instance: its slot is freed here
    // (a filter rejects it silently; a small namespace, scored from the server, never meets it).
    cache.drop(ids.filter((id) => !held.has(id)));
    return passed;
  });
}

/** q · the stored vector of space `key` of each of `ids` (those that have one). */
async function storedScores(m: MongoModels, q: Float32Array, key: string, ids: string[]): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  if (ids.length === 0) return out;
  const docs = (await m.memories.collection.find({ _id: { $in: ids }, vec_model: key } as never, { projection: { _id: 1, vec: 1 } }).toArray()) as unknown as Array<{ _id: string; vec: unknown }>;
  for (const d of docs) {
    const v = toVector(d.vec);
    if (v && v.length === q.length) out.set(d._id, dot(q, v));
  }
  return out;
}

export async function similar(m: MongoModels, cache: MongoVectorCache, q: Float32Array, key: string, limit: number, filter: FilterQuery<MemoryRecord>) {
  const hits = await scan(m, cache, q, key, filter, limit + SPARE);
  const out: SimilarHit[] = [];
  for (let from = 0; from < hits.length && out.length < limit;) {
    const slice = hits.slice(from, from + (limit - out.length));
    from += slice.length;
    const docs = (await m.memories.collection.find({ _id: { $in: slice.map((h) => h.id) } } as never, { projection: { title: 1 } }).toArray()) as unknown as Array<{
      _id: string;
      title?: string | null;
    }>;
    const titles = new Map(docs.map((d) => [d._id, d.title ?? null]));
    cache.drop(slice.filter((h) => !titles.has(h.id)).map((h) => h.id));
    for (const h of slice) if (titles.has(h.id)) out.push({ id: h.id, title: titles.get(h.id) ?? null, score: Number(h.score.toPrecision(4)) });
  }
  return out;
}

/**
 * The candidates of a semantic or hybrid search (src/memories/search/relevance.ts ranks them):
 * the keyword list (the adapter's own search, best FUSION_CANDIDATES) and the vector scan's
 * best, each with its cosine, the query words it holds and its session neighbours among the
 * candidates; and each query word's document count. Quoted phrases do not filter here
 * (softenPhrases): they weigh in the ranking. A semantic hit whose document is gone (deleted by
 * another instance) leaves the copy and the candidates.
 */
export async function vectorSearch(
  m: MongoModels,
  cache: MongoVectorCache,
  query: SearchQuery,
  filter: FilterQuery<MemoryRecord>,
  keywordSearch: (q: SearchQuery) => Promise<MemoryPage>,
  docsOf: (ids: string[]) => Promise<Map<string, { row: MemoryRow; content: string }>>,
  countWord: (word: string) => Promise<number>,
): Promise<MemoryPage> {
  const mode = query.mode === 'semantic' ? 'semantic' : 'hybrid';
  const q = query.vector as Float32Array;
  const key = query.vectorKey as string;
  const soft = softenPhrases(query.text);
  const parsed = parseSearchQuery(soft);
  const K = Math.max(FUSION_CANDIDATES, query.offset + query.limit);
  const hard = hardRegexFilter(parsed);
  const words = matchWords(parseSearchQuery(query.text));
  const [keyword, scanned, docs, df] = await Promise.all([
    mode === 'hybrid' && hasPositiveTerms(parsed)
      ? keywordSearch({ ...query, text: soft, mode: 'keyword', vector: undefined, limit: K, offset: 0 })
      : Promise.resolve({ rows: [], total: 0 } as MemoryPage),
    scan(m, cache, q, key, hard ? { $and: [filter, hard] } : filter, K + SPARE),
    m.memories.estimatedDocumentCount(),
    Promise.all(words.map(async (w) => [w, await countWord(w)] as [string, number])),
  ]);
  const keywordScore = new Map(keyword.rows.map((r) => [r.id, r.score ?? 0]));
  const cosines = new Map(scanned.map((s) => [s.id, s.score]));
  const stored = await storedScores(
    m,
    q,
    key,
    keyword.rows.map((r) => r.id).filter((id) => !cosines.has(id)),
  );
  for (const [id, c] of stored) cosines.set(id, c);
  const wantedScan = scanned.map((s) => s.id);
  const found = await docsOf([...new Set([...keywordScore.keys(), ...wantedScan])]);
  cache.drop(wantedScan.filter((id) => !found.has(id)));
  const vectorList = wantedScan.filter((id) => found.has(id)).slice(0, K);
  const ids = [...new Set([...keyword.rows.map((r) => r.id).filter((id) => found.has(id)), ...vectorList])];
  const neighbours = new Map<string, string[]>();
  if (mode === 'hybrid') {
    // Looked up for the conversation turns among the first NEIGHBOUR_LOOKUPS of each list (two small queries each).
    const lead = [...keyword.rows.slice(0, NEIGHBOUR_LOOKUPS).map((r) => r.id), ...vectorList.slice(0, NEIGHBOUR_LOOKUPS)].filter((id) => found.get(id)?.row.type === 'conversation');
    await addNeighbours(m, new Set(ids), [...new Set(lead)], found, neighbours, query.filter.namespace);
  }
  const match = termMatcher(query.text);
  const inVectorList = new Set(vectorList);
  const list: SearchCandidate[] = ids.map((id) => {
    const { row, content } = found.get(id) as { row: MemoryRow; content: string };
    const hit = match(row.title, row.tags, content);
    return {
      row,
      cosine: cosines.get(id),
      semantic: inVectorList.has(id),
      keyword: keywordScore.get(id),
      words: hit.words,
      phrases: hit.phrases,
      length: content.length,
      neighbours: neighbours.get(id) ?? [],
    };
  });
  return { rows: [], total: 0, candidates: { list, docs, df } };
}

/** Session neighbours are looked up for this many of the best candidates (two small queries each). */
const NEIGHBOUR_LOOKUPS = 20;

/** Links each of `keys` with the memory just before and after it (same namespace, project and agent, close in time) when that one is a candidate too. */
async function addNeighbours(m: MongoModels, candidates: Set<string>, keys: string[], found: Map<string, { row: MemoryRow }>, out: Map<string, string[]>, ns: string): Promise<void> {
  const link = (a: string, b: string) => {
    if (!candidates.has(a) || !candidates.has(b)) return;
    const la = out.get(a) ?? [];
    const lb = out.get(b) ?? [];
    if (!la.includes(b)) la.push(b);
    if (!lb.includes(a)) lb.push(a);
    out.set(a, la);
    out.set(b, lb);
  };
  await Promise.all(
    keys.flatMap((id) => {
      const me = found.get(id)?.row;
      if (!me) return [];
      // A session never crosses namespaces (issue 43).
      const same = { ...(ns === ALL_NAMESPACES ? {} : { namespace: ns }), project: me.project, agent: me.agent };
      const at = me.createdAt;
      const near = async (dir: 1 | -1) => {
        const cond = dir < 0 ? { $or: [{ createdAt: { $lt: at } }, { createdAt: at, _id: { $lt: id } }] } : { $or: [{ createdAt: { $gt: at } }, { createdAt: at, _id: { $gt: id } }] };
        const n = (await m.memories.collection.findOne({ ...same, ...cond } as never, { projection: { _id: 1, createdAt: 1 }, sort: { createdAt: dir, _id: dir } })) as unknown as {
          _id: string;
          createdAt: Date;
        } | null;
        if (n && Math.abs(new Date(n.createdAt).getTime() - at.getTime()) <= SESSION_GAP_MS) link(id, n._id);
      };
      return [near(-1), near(1)];
    }),
  );
}
