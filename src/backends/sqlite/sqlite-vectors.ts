import { ALL_NAMESPACES } from '../../namespaces/namespace';
import type Database from 'better-sqlite3';
import { FUSION_CANDIDATES, hasPositiveTerms, matchWords, memoryEmbeddingText, parseSearchQuery, snippetMaker, softenPhrases, termMatcher, toFts5Terms } from '../../../libs/search-query';
import { Accept, dot, VectorHit, vectorOf } from '../vector/vector-index';
import type { EmbeddingJob, EmbeddingProgress, MemoryFilter, MemoryPage, SearchCandidate, SearchQuery, SimilarHit } from '../ports/memory.model';
import { filterSql, hasFilter, onlyNamespace, searchFilter } from './sqlite-list-planner';
import { NEXT_SEQ, PREVIOUS_SEQ, REQUEUE } from './sqlite-memory-schema';
import { FtsScope } from './sqlite-fts-namespace';
import { DbRow, ROW_COLUMNS, Stmt, toRow } from './sqlite-memory-rows';
import { documentCounts, rankedFullTextSeqs, RankingOptions } from './sqlite-ranking';

export function toBlob(v: Float32Array): Buffer {
  return Buffer.from(v.buffer.slice(v.byteOffset, v.byteOffset + v.byteLength));
}

/**
 * The filter of a vector search as a predicate over candidate seqs (VectorIndex's Accept): the
 * list filters and the query's exclusions (quoted phrases weigh in the ranking, they do not filter
 * a semantic or hybrid search); null when nothing constrains it. `allowed` lists the filter's
 * memories when they are few (≤ max; scored exactly instead).
 */
export function vectorFilter(stmt: Stmt, filter: MemoryFilter | undefined, text: string | undefined, max: number): { accept: Accept; allowed: () => number[] | null } | null {
  const { exclusion } = toFts5Terms(parseSearchQuery(softenPhrases(text ?? '')));
  if (filter === undefined || typeof filter.namespace !== 'string') throw new Error('A vector search without a namespace');
  const scoped = searchFilter(stmt, filter);
  const filtered = hasFilter(scoped);
  if (!filtered && !exclusion) return null;
  const { where, params } = filtered ? filterSql(scoped) : { where: [] as string[], params: {} };
  if (exclusion) {
    // The namespace's own matches only (FtsScope): a small namespace does not walk the store's.
    where.push('m.seq NOT IN (SELECT rowid FROM memories_fts WHERE memories_fts MATCH @v_except)');
    params.v_except = FtsScope.of(scoped.namespace).fts(exclusion);
  }
  const cond = where.join(' AND ');
  const accept: Accept = (labels) =>
    new Set(
      stmt(`SELECT m.seq FROM memories m WHERE m.seq IN (SELECT value FROM json_each(@v_labels)) AND ${cond}`)
        .pluck()
        .all({ ...params, v_labels: JSON.stringify(labels) }) as number[],
    );
  const allowed = () => {
    const seqs = stmt(`SELECT m.seq FROM memories m WHERE ${cond} LIMIT @v_max`)
      .pluck()
      .all({ ...params, v_max: max + 1 }) as number[];
    return seqs.length > max ? null : seqs;
  };
  return { accept, allowed };
}

/**
 * The candidates of a semantic or hybrid search (src/memories/search/relevance.ts ranks them):
 * the full-text list's best FUSION_CANDIDATES (hybrid) and `semantic`, the vector index's best
 * (every list filter and exclusion already applied: sqlite-memory-index.ts asks it on the main
 * thread); each with its cosine (computed for keyword hits too), the query words it holds and its
 * session neighbours among the candidates; and each query word's document count (its rarity).
 * Quoted phrases do not filter here (softenPhrases): they weigh in the ranking.
 */
export function vectorSearch(stmt: Stmt, ranking: RankingOptions, query: SearchQuery, semantic: VectorHit[]): MemoryPage {
  const mode = query.mode === 'semantic' ? 'semantic' : 'hybrid';
  const q = query.vector as Float32Array;
  const soft = softenPhrases(query.text);
  const K = Math.max(FUSION_CANDIDATES, query.offset + query.limit);

  // Keyword list: seq → score.
  const keyword = new Map<number, number>();
  if (mode === 'hybrid' && hasPositiveTerms(parseSearchQuery(soft))) {
    for (const r of rankedFullTextSeqs(stmt, ranking, { ...query, text: soft, limit: K, offset: 0 })) keyword.set(r.seq, r.score);
  }
  const cosines = new Map<number, number>(semantic.slice(0, K).map((s) => [s.label, s.score]));
  const inVectorList = new Set(cosines.keys());
  for (const [seq, c] of storedCosines(
    stmt,
    q,
    query.vectorKey as string,
    [...keyword.keys()].filter((seq) => !cosines.has(seq)),
  ))
    cosines.set(seq, c);
  const seqs = [...new Set([...inVectorList, ...keyword.keys()])];
  const links = new Map<number, { neighbours?: number[] }>(seqs.map((seq) => [seq, {}]));
  if (mode === 'hybrid') linkNeighbours(stmt, links);
  // The last guard of the namespace (decision 0100): a row of another namespace never becomes a candidate.
  const ns = query.filter.namespace;
  const details = (seqs.length === 0 ? [] : (stmt(`SELECT ${ROW_COLUMNS}, m.content FROM memories m WHERE m.seq IN (SELECT value FROM json_each(?))`).all(JSON.stringify(seqs)) as DbRow[])).filter(
    (d) => ns === ALL_NAMESPACES || d.namespace === ns,
  );
  const idOf = new Map(details.map((d) => [d.seq, d.id]));
  const match = termMatcher(query.text);
  const snippet = snippetMaker(parseSearchQuery(soft));
  const list: SearchCandidate[] = details.map((d) => {
    const row = toRow(d);
    row.snippet = snippet(d.content ?? '') ?? row.snippet;
    const m = match(row.title, row.tags, d.content ?? '');
    return {
      row,
      cosine: cosines.get(d.seq),
      semantic: inVectorList.has(d.seq),
      keyword: keyword.get(d.seq),
      words: m.words,
      phrases: m.phrases,
      length: (d.content ?? '').length,
      neighbours: (links.get(d.seq)?.neighbours ?? []).flatMap((n) => idOf.get(n) ?? []),
    };
  });
  return { rows: [], total: 0, candidates: { list, ...wordCounts(stmt, FtsScope.of(searchFilter(stmt, query.filter).namespace), query.text) } };
}

/** The scope's size and each query word's (matchWords) document count: the namespace's when the MATCH keeps to it (FtsScope), else the store's. */
function wordCounts(stmt: Stmt, scope: FtsScope, text: string): { docs: number; df: Array<[string, number]> } {
  const words = matchWords(parseSearchQuery(text));
  const { docs, df } = documentCounts(
    stmt,
    scope,
    words.map((w) => toFts5Terms(parseSearchQuery(w)).terms[0]?.expr),
  );
  return { docs, df: words.map((w, i) => [w, df[i]]) };
}

/** q · the stored vector of each of `seqs` in space `key`. */
function storedCosines(stmt: Stmt, q: Float32Array, key: string, seqs: number[]): Map<number, number> {
  const out = new Map<number, number>();
  if (seqs.length === 0) return out;
  const rows = stmt('SELECT seq, vec FROM memory_vectors WHERE model = ? AND seq IN (SELECT value FROM json_each(?))').all(key, JSON.stringify(seqs)) as Array<{ seq: number; vec: Buffer }>;
  for (const r of rows) {
    const v = vectorOf(r.vec);
    if (v && v.length === q.length) out.set(r.seq, dot(q, v));
  }
  return out;
}

/**
 * Links the candidates that are session neighbours: each candidate and the memory just before it
 * in its session (PREVIOUS_SEQ, read from the table, so a memory without a vector yet is linked
 * too), when that one is a candidate too, each in the other's `neighbours`. Only conversation turns
 * are linked: the ranking (relevance.ts) counts no other link.
 */
export function linkNeighbours(stmt: Stmt, candidates: Map<number, { neighbours?: number[] }>): void {
  if (candidates.size === 0) return;
  const rows = stmt(`SELECT m.seq, ${PREVIOUS_SEQ} AS prev FROM memories m WHERE m.seq IN (SELECT value FROM json_each(?)) AND m.type = 'conversation'`).all(
    JSON.stringify([...candidates.keys()]),
  ) as Array<{
    seq: number;
    prev: number | null;
  }>;
  for (const r of rows) {
    const c = candidates.get(r.seq);
    const before = r.prev === null ? undefined : candidates.get(r.prev);
    if (!c || !before || r.prev === null) continue;
    (c.neighbours ??= []).push(r.prev);
    (before.neighbours ??= []).push(r.seq);
  }
}

/** The memories of `top` with their titles (duplicate hints), in its order. */
export function similarRows(stmt: Stmt, top: VectorHit[], ns: string): SimilarHit[] {
  if (top.length === 0) return [];
  const rows = stmt('SELECT seq, id, title, namespace FROM memories WHERE seq IN (SELECT value FROM json_each(?))').all(JSON.stringify(top.map((t) => t.label))) as Array<{
    seq: number;
    id: string;
    title: string | null;
    namespace: string;
  }>;
  const bySeq = new Map(onlyNamespace(ns, rows).map((r) => [r.seq, r]));
  return top.flatMap((t) => {
    const r = bySeq.get(t.label);
    return r ? [{ id: r.id, title: r.title, score: Number(t.score.toPrecision(4)) }] : [];
  });
}

// --- the embedding queue (main connection) ---

export function useVectorSpace(db: Database.Database, stmt: Stmt, key: string): boolean {
  return db
    .transaction(() => {
      const current = stmt("SELECT value FROM embedding_meta WHERE key = 'vector_space'").pluck().get() as string | undefined;
      if (current === key) return false;
      stmt("INSERT INTO embedding_meta (key, value) VALUES ('vector_space', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value").run(key);
      // Memories without a vector of this space are queued (a first start queues only those missing).
      stmt(
        `INSERT INTO embedding_queue (seq) SELECT m.seq FROM memories m WHERE NOT EXISTS (SELECT 1 FROM memory_vectors v WHERE v.seq = m.seq AND v.model = ?)
       ${REQUEUE}`,
      ).run(key);
      return current !== undefined;
    })
    .immediate();
}

export function claimJobs(db: Database.Database, stmt: Stmt, owner: string, max: number, leaseMs: number): EmbeddingJob[] {
  return db
    .transaction(() => {
      const now = Date.now();
      const due = stmt('SELECT seq FROM embedding_queue WHERE next_at <= ? AND lease_until <= ? ORDER BY next_at, seq LIMIT ?').pluck().all(now, now, max) as number[];
      if (due.length === 0) return [];
      const lease = stmt('UPDATE embedding_queue SET lease_owner = ?, lease_until = ? WHERE seq = ?');
      for (const seq of due) lease.run(owner, now + leaseMs, seq);
      // With the content of the memory just before it in its session (memoryEmbeddingText).
      // The context only between turns of a conversation (both of type conversation), never between notes written in a row.
      const rows = stmt(
        `SELECT m.id, m.title, m.content, q.gen, q.attempts, p.seq AS previous, CASE WHEN m.type = 'conversation' AND p.type = 'conversation' THEN p.content END AS context
       FROM embedding_queue q JOIN memories m ON m.seq = q.seq LEFT JOIN memories p ON p.seq = ${PREVIOUS_SEQ}
       WHERE q.seq IN (SELECT value FROM json_each(?))`,
      ).all(JSON.stringify(due)) as Array<{ id: string; title: string | null; content: string; previous: number | null; context: string | null; gen: number; attempts: number }>;
      return rows.map((r) => ({ id: r.id, text: memoryEmbeddingText(r.title, r.content, r.context), gen: r.gen, attempts: r.attempts, previous: r.previous }));
    })
    .immediate();
}

/**
 * Stores a job's vector with its session link (prev: the memory before it, as now). When that is no
 * longer the memory whose text the vector carries (it moved or went while the job ran), the job
 * stays queued, to be embedded again at once. A memory stored between two others (an import of
 * older memories) is the new prev of the one after it: that one is queued (embedding_forget_delete
 * and embedding_enqueue_move in the schema handle memories leaving a session).
 */
export function storeJobVector(db: Database.Database, stmt: Stmt, job: EmbeddingJob, key: string, vector: Float32Array): void {
  db.transaction(() => {
    const seq = stmt('SELECT seq FROM memories WHERE id = ?').pluck().get(job.id) as number | undefined;
    if (seq === undefined) return; // deleted meanwhile
    const prev = (stmt(`SELECT ${PREVIOUS_SEQ} FROM memories m WHERE m.seq = ?`).pluck().get(seq) as number | null) ?? null;
    // Above every stamp ever given, not only the rows left: max(stamp) alone would give the stamp of
    // a deleted newest vector to the next one, which a cache that had seen it would skip (and keep
    // the deleted one). vector_version counts every write, so it is never below a stamp given.
    const stamp =
      (stmt("SELECT max(coalesce((SELECT max(stamp) FROM memory_vectors), 0), coalesce((SELECT CAST(value AS INTEGER) FROM embedding_meta WHERE key = 'vector_version'), 0))")
        .pluck()
        .get() as number) + 1;
    stmt(
      'INSERT INTO memory_vectors (seq, model, stamp, vec, prev) VALUES (?, ?, ?, ?, ?) ON CONFLICT (seq) DO UPDATE SET model = excluded.model, stamp = excluded.stamp, vec = excluded.vec, prev = excluded.prev',
    ).run(seq, key, stamp, toBlob(vector), prev);
    if (job.previous === undefined || job.previous === prev) stmt('DELETE FROM embedding_queue WHERE seq = ? AND gen = ?').run(seq, job.gen);
    else stmt('UPDATE embedding_queue SET next_at = 0, lease_owner = NULL, lease_until = 0 WHERE seq = ? AND gen = ?').run(seq, job.gen);
    // The memory after it, when it has a vector whose prev is another.
    const next = stmt(`SELECT ${NEXT_SEQ} FROM memories m WHERE m.seq = ?`).pluck().get(seq) as number | null;
    const nextVector = next === null ? undefined : (stmt('SELECT prev FROM memory_vectors WHERE seq = ?').get(next) as { prev: number | null } | undefined);
    if (nextVector && nextVector.prev !== seq) {
      stmt(
        `INSERT INTO embedding_queue (seq) VALUES (?)
         ${REQUEUE}`,
      ).run(next);
    }
  }).immediate();
}

export function failJob(stmt: Stmt, job: EmbeddingJob, error: string, retryAt: Date): void {
  stmt(
    `UPDATE embedding_queue SET attempts = attempts + 1, next_at = ?, lease_owner = NULL, lease_until = 0, error = ?
     WHERE seq = (SELECT seq FROM memories WHERE id = ?) AND gen = ?`,
  ).run(retryAt.getTime(), error.slice(0, 500), job.id, job.gen);
}

export function progress(stmt: Stmt, key: string | null): EmbeddingProgress {
  const pending = stmt('SELECT count(*) FROM embedding_queue').pluck().get() as number;
  const failing = stmt('SELECT count(*) FROM embedding_queue WHERE attempts > 0').pluck().get() as number;
  const lastError = (stmt('SELECT error FROM embedding_queue WHERE error IS NOT NULL ORDER BY next_at DESC LIMIT 1').pluck().get() as string | undefined) ?? null;
  const embedded = key === null ? 0 : (stmt('SELECT count(*) FROM memory_vectors WHERE model = ?').pluck().get(key) as number);
  return { pending, embedded, failing, lastError };
}
