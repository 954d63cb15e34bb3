import type Database from 'better-sqlite3';
import { fuse, FUSION_CANDIDATES, memoryEmbeddingText, FusionCandidate, hasPositiveTerms, parseSearchQuery, ParsedSearch, snippetMaker, toFts5Terms } from '../../../libs/search-query';
import { Accept, dot, VectorHit, vectorOf } from '../vector/vector-index';
import type { EmbeddingJob, EmbeddingProgress, MemoryFilter, MemoryPage, MemoryRow, SearchQuery, SimilarHit } from '../ports/memory.model';
import { filterSql, hasFilter, onlyNamespace, searchFilter } from './sqlite-list-planner';
import { NEXT_SEQ, PREVIOUS_SEQ, REQUEUE } from './sqlite-memory-schema';
import { DbRow, ROW_COLUMNS, Stmt, toRow } from './sqlite-memory-rows';
import { rankedFullTextSeqs, RankingOptions } from './sqlite-ranking';

export function toBlob(v: Float32Array): Buffer {
  return Buffer.from(v.buffer.slice(v.byteOffset, v.byteOffset + v.byteLength));
}

/**
 * The filter of a vector search as a predicate over candidate seqs (VectorIndex's Accept): the
 * list filters, the query's required phrases and its exclusions; null when nothing constrains it.
 * `allowed` lists the filter's memories when they are few (≤ max; scored exactly instead).
 */
export function vectorFilter(stmt: Stmt, filter: MemoryFilter | undefined, text: string | undefined, max: number): { accept: Accept; allowed: () => number[] | null } | null {
  const parsed = parseSearchQuery(text ?? '');
  const { terms, exclusion } = toFts5Terms(parsed);
  const phrases = terms.filter((t) => t.required).map((t) => t.expr);
  if (filter === undefined || typeof filter.namespace !== 'string') throw new Error('A vector search without a namespace');
  const scoped = searchFilter(stmt, filter);
  const filtered = hasFilter(scoped);
  if (!filtered && phrases.length === 0 && !exclusion) return null;
  const { where, params } = filtered ? filterSql(scoped) : { where: [] as string[], params: {} };
  if (phrases.length > 0) {
    where.push('m.seq IN (SELECT rowid FROM memories_fts WHERE memories_fts MATCH @v_only)');
    params.v_only = phrases.join(' AND ');
  }
  if (exclusion) {
    where.push('m.seq NOT IN (SELECT rowid FROM memories_fts WHERE memories_fts MATCH @v_except)');
    params.v_except = exclusion;
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
 * Semantic or hybrid search (README "Hybrid search"): the full-text list's best
 * FUSION_CANDIDATES and `semantic`, the vector index's best (every list filter, phrase and
 * exclusion already applied: sqlite-memory-index.ts asks it on the main thread), fused by
 * libs/search-query/fusion.ts. A keyword hit's cosine and the session links come from the table.
 */
export function vectorSearch(stmt: Stmt, ranking: RankingOptions, query: SearchQuery, semantic: VectorHit[]): MemoryPage {
  const mode = query.mode === 'semantic' ? 'semantic' : 'hybrid';
  const q = query.vector as Float32Array;
  const parsed = parseSearchQuery(query.text);
  const K = Math.max(FUSION_CANDIDATES, query.offset + query.limit);

  // Keyword list: seq → score.
  const keyword = new Map<number, number>();
  if (mode === 'hybrid' && hasPositiveTerms(parsed)) {
    for (const r of rankedFullTextSeqs(stmt, ranking, { ...query, limit: K, offset: 0 })) keyword.set(r.seq, r.score);
  }

  // Every candidate's cosine: the vector list's own, computed for the keyword list's others.
  const candidates = new Map<number, FusionCandidate<number>>();
  for (const s of semantic.slice(0, K)) candidates.set(s.label, { key: s.label, cosine: s.score, semanticHit: true, order: s.label });
  const cosines = storedCosines(
    stmt,
    q,
    query.vectorKey as string,
    [...keyword.keys()].filter((seq) => !candidates.has(seq)),
  );
  for (const [seq, score] of keyword) {
    const c = candidates.get(seq);
    if (c) c.keyword = score;
    else candidates.set(seq, { key: seq, keyword: score, cosine: cosines.get(seq), order: seq });
  }
  if (mode === 'hybrid') linkNeighbours(stmt, candidates);
  if (query.time) createdAts(stmt, candidates);
  const fused = fuse([...candidates.values()], mode, query.time);
  const pageOf = fused.slice(query.offset, query.offset + query.limit);
  const rows = onlyNamespace(query.filter.namespace, pageRows(stmt, pageOf, parsed));
  return { rows, total: fused.length };
}

/** Each candidate's created at (ms), for the date preference of a question that names a time (fusion.ts). */
function createdAts(stmt: Stmt, candidates: Map<number, { at?: number }>): void {
  if (candidates.size === 0) return;
  const rows = stmt('SELECT seq, created_at FROM memories WHERE seq IN (SELECT value FROM json_each(?))').all(JSON.stringify([...candidates.keys()])) as Array<{ seq: number; created_at: number }>;
  for (const r of rows) (candidates.get(r.seq) as { at?: number }).at = r.created_at;
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
 * Links the candidates that are session neighbours (libs/search-query/fusion.ts): each candidate
 * with a vector and the memory just before it in its session (its vector's prev), when that one is
 * a candidate too, each in the other's `neighbours`.
 */
export function linkNeighbours(stmt: Stmt, candidates: Map<number, { neighbours?: number[] }>): void {
  if (candidates.size === 0) return;
  const rows = stmt('SELECT seq, prev FROM memory_vectors WHERE prev IS NOT NULL AND seq IN (SELECT value FROM json_each(?))').all(JSON.stringify([...candidates.keys()])) as Array<{
    seq: number;
    prev: number;
  }>;
  const prevOf = new Map(rows.map((r) => [r.seq, r.prev]));
  for (const [seq, c] of candidates) {
    const prev = prevOf.get(seq);
    const before = prev === undefined ? undefined : candidates.get(prev);
    if (prev === undefined || !before) continue;
    (c.neighbours ??= []).push(prev);
    (before.neighbours ??= []).push(seq);
  }
}

function pageRows(stmt: Stmt, page: Array<{ key: number; score: number; matched: Array<'keyword' | 'semantic'> }>, parsed: ParsedSearch): MemoryRow[] {
  if (page.length === 0) return [];
  const details = stmt(`SELECT ${ROW_COLUMNS}, m.content FROM memories m WHERE m.seq IN (SELECT value FROM json_each(?))`).all(JSON.stringify(page.map((p) => p.key))) as DbRow[];
  const bySeq = new Map(details.map((d) => [d.seq, d]));
  const snippet = snippetMaker(parsed);
  const rows: MemoryRow[] = [];
  for (const p of page) {
    const d = bySeq.get(p.key);
    if (!d) continue;
    const row = toRow(d);
    row.snippet = snippet(d.content ?? '') ?? row.snippet;
    row.score = p.score;
    row.matched = p.matched;
    rows.push(row);
  }
  return rows;
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
      const rows = stmt(
        `SELECT m.id, m.title, m.content, q.gen, q.attempts, p.seq AS previous, p.content AS context
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
