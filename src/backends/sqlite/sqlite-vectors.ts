import type Database from 'better-sqlite3';
import { fuse, FUSION_CANDIDATES, memoryEmbeddingText, FusionCandidate, pageReach, SESSION_GAP_MS, hasPositiveTerms, parseSearchQuery, ParsedSearch, snippetMaker, toFts5Terms } from '../../../libs/search-query';
import type { EmbeddingJob, EmbeddingProgress, MemoryFilter, MemoryPage, MemoryRow, SearchQuery, SimilarHit } from '../ports/memory.model';
import { filterSql, hasFilter } from './sqlite-list-planner';
import { DbRow, ROW_COLUMNS, Stmt, toRow } from './sqlite-memory-rows';
import { rankedFullTextSeqs, RankingOptions } from './sqlite-ranking';
import type { VectorCache } from './sqlite-vector-cache';

export { VectorCache } from './sqlite-vector-cache';

export function toBlob(v: Float32Array): Buffer {
  return Buffer.from(v.buffer.slice(v.byteOffset, v.byteOffset + v.byteLength));
}

/** Memories allowed by the hard parts of a query (phrases required, exclusions out), as FTS sets; null = no constraint. */
function hardConstraints(stmt: Stmt, parsed: ParsedSearch): { only: Set<number> | null; except: Set<number> | null } {
  const { terms, exclusion } = toFts5Terms(parsed);
  const phrases = terms.filter((t) => t.required);
  const rowids = (match: string) => new Set(stmt('SELECT rowid FROM memories_fts WHERE memories_fts MATCH ?').pluck().all(match) as number[]);
  return {
    only: phrases.length > 0 ? rowids(phrases.map((t) => t.expr).join(' AND ')) : null,
    except: exclusion ? rowids(exclusion) : null,
  };
}

/**
 * Semantic or hybrid search (README "Hybrid search"): the full-text list's best
 * FUSION_CANDIDATES and the vector list's best FUSION_CANDIDATES (every list filter applied to
 * both; phrases and exclusions too), fused by libs/search-query/fusion.ts.
 */
export function vectorSearch(stmt: Stmt, cache: VectorCache, ranking: RankingOptions, query: SearchQuery): MemoryPage {
  const mode = query.mode === 'semantic' ? 'semantic' : 'hybrid';
  const q = query.vector as Float32Array;
  cache.refresh(stmt, query.vectorKey as string);
  const parsed = parseSearchQuery(query.text);
  const K = Math.max(FUSION_CANDIDATES, query.offset + query.limit);

  // Keyword list: seq → score.
  const keyword = new Map<number, number>();
  if (mode === 'hybrid' && hasPositiveTerms(parsed)) {
    for (const r of rankedFullTextSeqs(stmt, ranking, { ...query, limit: K, offset: 0 })) keyword.set(r.seq, r.score);
  }

  // Vector list: the filter's memories (or all), minus what the hard parts of the query rule out.
  const hard = hardConstraints(stmt, parsed);
  let only: Iterable<number> | null = hard.only;
  if (hasFilter(query.filter)) {
    const allowed = filteredSeqs(stmt, query.filter);
    only = hard.only ? allowed.filter((s) => hard.only?.has(s)) : allowed;
  }
  const semantic = cache.top(q, K, only, hard.except);

  // Every candidate's cosine: the vector list's own, computed for the keyword list's others.
  const candidates = new Map<number, FusionCandidate<number>>();
  for (const s of semantic) candidates.set(s.seq, { key: s.seq, cosine: s.score, semanticHit: true, order: s.seq });
  const cosines = cache.cosines([...keyword.keys()].filter((seq) => !candidates.has(seq)), q);
  for (const [seq, score] of keyword) {
    const c = candidates.get(seq);
    if (c) c.keyword = score;
    else candidates.set(seq, { key: seq, keyword: score, cosine: cosines.get(seq), order: seq });
  }
  if (mode === 'hybrid') addNeighbours(stmt, candidates, query.offset + query.limit);
  const fused = fuse([...candidates.values()], mode);
  const pageOf = fused.slice(query.offset, query.offset + query.limit);
  const rows = pageRows(stmt, pageOf, parsed);
  return { rows, total: fused.length };
}

/**
 * Each candidate's session neighbours (fusion.ts): the memory just before and just after it, same
 * project and agent, close in time — kept only when that memory is itself a candidate. So only
 * candidate pairs are tried: for a candidate, the nearest other candidate after (before) it in the
 * same project and agent within SESSION_GAP_MS is its neighbour when no memory lies between them
 * (one short indexed probe per such pair, instead of looking up both neighbours of every candidate
 * in the table: ~25 ms for 100 candidates at 100,000 memories). The probes run in one statement
 * (a search tries ~70 pairs at 100,000: 0.33 ms as one call each).
 *
 * With `wanted` (the fused places the page needs: offset + limit), only the candidates that can
 * reach those places are probed (fusion.ts pageReach); the others' neighbours are not looked up,
 * which changes nothing on the page.
 */
export function addNeighbours(stmt: Stmt, candidates: Map<number, FusionCandidate<number>>, wanted = Infinity): void {
  if (candidates.size < 2) return;
  type Row = { seq: number; project: string | null; agent: string | null; created_at: number };
  const rows = stmt('SELECT seq, project, agent, created_at FROM memories WHERE seq IN (SELECT value FROM json_each(?))').all(JSON.stringify([...candidates.keys()])) as Row[];
  const groups = new Map<string, Row[]>();
  for (const r of rows) {
    const g = JSON.stringify([r.project, r.agent]);
    const list = groups.get(g);
    if (list) list.push(r);
    else groups.set(g, [r]);
  }
  // As the neighbour queries read: after(c) is the least (created_at, seq) with created_at >= c's
  // and seq > c's; before(c) the greatest with created_at <= c's and seq < c's. A memory of the
  // same project and agent between c and the nearest candidate says that candidate is not it.
  const after = (c: Row, n: Row) => n.created_at >= c.created_at && n.seq > c.seq;
  const earlier = (a: Row, b: Row) => a.created_at < b.created_at || (a.created_at === b.created_at && a.seq < b.seq);
  const reach = pageReach([...candidates.values()], wanted);
  // Pairs to probe, in order: [c, its candidate neighbour, 1 = after c / 0 = before c].
  const pairs: Array<[Row, Row, 0 | 1]> = [];
  for (const group of groups.values()) {
    if (group.length < 2) continue;
    for (const c of group) {
      // The next candidate after c, and the previous one before it (c is after it).
      let next: Row | null = null;
      let prev: Row | null = null;
      for (const n of group) {
        if (n === c) continue;
        if (after(c, n) && (next === null || earlier(n, next))) next = n;
        if (after(n, c) && (prev === null || earlier(prev, n))) prev = n;
      }
      // Its possible neighbours: those two, when close enough in time; probed only when c can reach the page with them.
      const near = ([[prev, 0], [next, 1]] as Array<[Row | null, 0 | 1]>).filter(
        (p): p is [Row, 0 | 1] => p[0] !== null && Math.abs(p[0].created_at - c.created_at) <= SESSION_GAP_MS,
      );
      if (near.length > 0 && reach(c.seq, near.map(([other]) => other.seq))) {
        for (const [other, dir] of near) pairs.push([c, other, dir]);
      }
    }
  }
  if (pairs.length === 0) return;
  // Each direction bounds created_at on both sides, so each probe is one range of the
  // (agent, project, created_at) index.
  const open = stmt(
    `WITH p (i, project, agent, at, seq, oat, oseq, dir) AS MATERIALIZED (
       SELECT key, value->>0, value->>1, value->>2, value->>3, value->>4, value->>5, value->>6 FROM json_each(?))
     SELECT i FROM p WHERE dir = 1 AND NOT EXISTS (
       SELECT 1 FROM memories m WHERE m.agent IS p.agent AND m.project IS p.project AND m.created_at >= p.at AND m.created_at <= p.oat
         AND m.seq > p.seq AND (m.created_at < p.oat OR (m.created_at = p.oat AND m.seq < p.oseq)))
     UNION ALL
     SELECT i FROM p WHERE dir = 0 AND NOT EXISTS (
       SELECT 1 FROM memories m WHERE m.agent IS p.agent AND m.project IS p.project AND m.created_at <= p.at AND m.created_at >= p.oat
         AND m.seq < p.seq AND (m.created_at > p.oat OR (m.created_at = p.oat AND m.seq > p.oseq)))`,
  )
    .pluck()
    .all(JSON.stringify(pairs.map(([c, n, dir]) => [c.project, c.agent, c.created_at, c.seq, n.created_at, n.seq, dir]))) as number[];
  const near = new Map<number, number[]>();
  for (const i of open.sort((a, b) => a - b)) {
    const [c, n] = pairs[i];
    const list = near.get(c.seq);
    if (list) list.push(n.seq);
    else near.set(c.seq, [n.seq]);
  }
  for (const [seq, list] of near) {
    const c = candidates.get(seq);
    if (c) c.neighbours = list;
  }
}

function filteredSeqs(stmt: Stmt, filter: MemoryFilter): number[] {
  const { where, params } = filterSql(filter);
  return stmt(`SELECT m.seq FROM memories m WHERE ${where.join(' AND ')}`).pluck().all(params) as number[];
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

/** The memories closest to `q` (duplicate hints). */
export function similarTo(stmt: Stmt, cache: VectorCache, q: Float32Array, key: string, limit: number, filter?: MemoryFilter): SimilarHit[] {
  cache.refresh(stmt, key);
  const only = filter && hasFilter(filter) ? filteredSeqs(stmt, filter) : null;
  const top = cache.top(q, limit, only, null);
  if (top.length === 0) return [];
  const rows = stmt('SELECT seq, id, title FROM memories WHERE seq IN (SELECT value FROM json_each(?))').all(JSON.stringify(top.map((t) => t.seq))) as Array<{ seq: number; id: string; title: string | null }>;
  const bySeq = new Map(rows.map((r) => [r.seq, r]));
  return top.flatMap((t) => {
    const r = bySeq.get(t.seq);
    return r ? [{ id: r.id, title: r.title, score: Number(t.score.toPrecision(4)) }] : [];
  });
}

// --- the embedding queue (main connection) ---

export function useVectorSpace(db: Database.Database, stmt: Stmt, key: string): boolean {
  return db.transaction(() => {
    const current = stmt("SELECT value FROM embedding_meta WHERE key = 'vector_space'").pluck().get() as string | undefined;
    if (current === key) return false;
    stmt("INSERT INTO embedding_meta (key, value) VALUES ('vector_space', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value").run(key);
    // Memories without a vector of this space are queued (a first start queues only those missing).
    stmt(
      `INSERT INTO embedding_queue (seq) SELECT m.seq FROM memories m WHERE NOT EXISTS (SELECT 1 FROM memory_vectors v WHERE v.seq = m.seq AND v.model = ?)
       ON CONFLICT (seq) DO UPDATE SET gen = gen + 1, attempts = 0, next_at = 0, lease_owner = NULL, lease_until = 0, error = NULL`,
    ).run(key);
    return current !== undefined;
  }).immediate();
}

export function claimJobs(db: Database.Database, stmt: Stmt, owner: string, max: number, leaseMs: number): EmbeddingJob[] {
  return db.transaction(() => {
    const now = Date.now();
    const due = stmt('SELECT seq FROM embedding_queue WHERE next_at <= ? AND lease_until <= ? ORDER BY next_at, seq LIMIT ?').pluck().all(now, now, max) as number[];
    if (due.length === 0) return [];
    const lease = stmt('UPDATE embedding_queue SET lease_owner = ?, lease_until = ? WHERE seq = ?');
    for (const seq of due) lease.run(owner, now + leaseMs, seq);
    // With the content of the memory just before it in its session (memoryEmbeddingText).
    const rows = stmt(
      `SELECT m.id, m.title, m.content, q.gen, q.attempts,
         (SELECT p.content FROM memories p WHERE p.project IS m.project AND p.agent IS m.agent AND p.created_at <= m.created_at AND p.created_at >= m.created_at - @gap AND p.seq < m.seq
          ORDER BY p.created_at DESC, p.seq DESC LIMIT 1) AS previous
       FROM embedding_queue q JOIN memories m ON m.seq = q.seq WHERE q.seq IN (SELECT value FROM json_each(@due))`,
    ).all({ due: JSON.stringify(due), gap: SESSION_GAP_MS }) as Array<{ id: string; title: string | null; content: string; previous: string | null; gen: number; attempts: number }>;
    return rows.map((r) => ({ id: r.id, text: memoryEmbeddingText(r.title, r.content, r.previous), gen: r.gen, attempts: r.attempts }));
  }).immediate();
}

export function storeJobVector(db: Database.Database, stmt: Stmt, job: EmbeddingJob, key: string, vector: Float32Array): void {
  db.transaction(() => {
    const seq = stmt('SELECT seq FROM memories WHERE id = ?').pluck().get(job.id) as number | undefined;
    if (seq === undefined) return; // deleted meanwhile
    // Above every stamp ever given, not only the rows left: max(stamp) alone would give the stamp of
    // a deleted newest vector to the next one, which a cache that had seen it would skip (and keep
    // the deleted one). vector_version counts every write, so it is never below a stamp given.
    const stamp =
      (stmt("SELECT max(coalesce((SELECT max(stamp) FROM memory_vectors), 0), coalesce((SELECT CAST(value AS INTEGER) FROM embedding_meta WHERE key = 'vector_version'), 0))")
        .pluck()
        .get() as number) + 1;
    stmt('INSERT INTO memory_vectors (seq, model, stamp, vec) VALUES (?, ?, ?, ?) ON CONFLICT (seq) DO UPDATE SET model = excluded.model, stamp = excluded.stamp, vec = excluded.vec').run(
      seq,
      key,
      stamp,
      toBlob(vector),
    );
    stmt('DELETE FROM embedding_queue WHERE seq = ? AND gen = ?').run(seq, job.gen);
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
