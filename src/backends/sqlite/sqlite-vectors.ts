import type Database from 'better-sqlite3';
import { fuse, FUSION_CANDIDATES, memoryEmbeddingText, FusionCandidate, SESSION_GAP_MS, hasPositiveTerms, parseSearchQuery, ParsedSearch, snippetMaker, toFts5Terms } from '../../../libs/search-query';
import type { EmbeddingJob, EmbeddingProgress, MemoryFilter, MemoryPage, MemoryRow, SearchQuery } from '../ports/memory.model';
import { filterSql, hasFilter } from './sqlite-list-planner';
import { DbRow, ROW_COLUMNS, Stmt, toRow } from './sqlite-memory-rows';
import { rankedFullTextSearch, RankingOptions } from './sqlite-ranking';

/**
 * Vectors on the embedded index: a float32 blob per memory in memory_vectors, copied into one
 * Float32Array per connection (the search workers' and the main thread's) and scanned exactly
 * (every vector of the current space, or those of the filtered memories). The copy catches up
 * by `stamp` when embedding_meta.vector_version moves; a deletion (the copy then holds more
 * rows than the table) reloads it whole.
 */
export class VectorCache {
  private key: string | null = null;
  private version = -1;
  private stamp = 0;
  private dims = 0;
  private data = new Float32Array(0);
  /** seq of each slot; -1 = free. */
  private seqs: number[] = [];
  private slot = new Map<number, number>();
  /** Rows of memory_vectors seen (any space), to notice deletions. */
  private rows = 0;

  /** Brings the copy up to date with the table for vector space `key`. */
  refresh(stmt: Stmt, key: string): void {
    const version = Number((stmt("SELECT value FROM embedding_meta WHERE key = 'vector_version'").pluck().get() as string | undefined) ?? 0);
    if (key === this.key && version === this.version) return;
    if (key !== this.key) this.reset(key);
    const fresh = stmt('SELECT seq, model, stamp, vec FROM memory_vectors WHERE stamp > ? ORDER BY stamp').all(this.stamp) as Array<{ seq: number; model: string; stamp: number; vec: Buffer }>;
    for (const r of fresh) {
      this.stamp = Math.max(this.stamp, r.stamp);
      if (!this.slot.has(r.seq) && !this.seqsOther.has(r.seq)) this.rows++;
      if (r.model !== key) {
        this.drop(r.seq);
        this.seqsOther.add(r.seq);
        continue;
      }
      this.seqsOther.delete(r.seq);
      // A copy: the driver's buffer need not be 4-byte aligned.
      const v = new Float32Array(r.vec.byteLength / 4);
      new Uint8Array(v.buffer).set(r.vec);
      if (this.dims === 0) this.dims = v.length;
      if (v.length !== this.dims) {
        this.seqsOther.add(r.seq);
        continue;
      }
      this.put(r.seq, v);
    }
    const total = Number((stmt("SELECT value FROM embedding_meta WHERE key = 'vector_rows'").pluck().get() as string | undefined) ?? 0);
    if (total !== this.rows) {
      // Rows were deleted: reload everything.
      this.reset(key);
      this.version = -1;
      this.refresh(stmt, key);
      return;
    }
    this.version = version;
  }

  private seqsOther = new Set<number>();

  private reset(key: string): void {
    this.key = key;
    this.version = -1;
    this.stamp = 0;
    this.dims = 0;
    this.data = new Float32Array(0);
    this.seqs = [];
    this.slot.clear();
    this.seqsOther.clear();
    this.rows = 0;
  }

  private put(seq: number, v: Float32Array): void {
    let i = this.slot.get(seq);
    if (i === undefined) {
      i = this.seqs.length;
      this.seqs.push(seq);
      this.slot.set(seq, i);
      if ((i + 1) * this.dims > this.data.length) {
        const grown = new Float32Array(Math.max(1024, (i + 1) * 2) * this.dims);
        grown.set(this.data);
        this.data = grown;
      }
    }
    this.data.set(v, i * this.dims);
  }

  private drop(seq: number): void {
    const i = this.slot.get(seq);
    if (i === undefined) return;
    this.slot.delete(seq);
    this.seqs[i] = -1;
  }

  get size(): number {
    return this.slot.size;
  }

  cosine(seq: number, q: Float32Array): number | undefined {
    const i = this.slot.get(seq);
    if (i === undefined || q.length !== this.dims) return undefined;
    return dotAt(q, this.data, i * this.dims);
  }

  /** The `k` closest vectors (exact scan), among `only` when given and never those in `except`. */
  top(q: Float32Array, k: number, only: Iterable<number> | null, except: Set<number> | null): Array<{ seq: number; score: number }> {
    if (q.length !== this.dims || k <= 0) return [];
    const best: Array<{ seq: number; score: number }> = [];
    let floor = -Infinity;
    const consider = (seq: number, i: number) => {
      if (except?.has(seq)) return;
      const score = dotAt(q, this.data, i * this.dims);
      if (best.length >= k && score <= floor) return;
      best.push({ seq, score });
      if (best.length > k * 2) {
        best.sort((a, b) => b.score - a.score || b.seq - a.seq);
        best.length = k;
        floor = best[k - 1].score;
      }
    };
    if (only) {
      for (const seq of only) {
        const i = this.slot.get(seq);
        if (i !== undefined) consider(seq, i);
      }
    } else {
      for (let i = 0; i < this.seqs.length; i++) if (this.seqs[i] >= 0) consider(this.seqs[i], i);
    }
    best.sort((a, b) => b.score - a.score || b.seq - a.seq);
    return best.slice(0, k);
  }
}

function dotAt(q: Float32Array, data: Float32Array, off: number): number {
  let s = 0;
  for (let j = 0; j < q.length; j++) s += q[j] * data[off + j];
  return s;
}

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

  // Keyword list (ids → seqs).
  const keyword = new Map<number, number>();
  if (mode === 'hybrid' && hasPositiveTerms(parsed)) {
    const page = rankedFullTextSearch(stmt, ranking, { ...query, limit: K, offset: 0 });
    if (page.rows.length > 0) {
      const ids = page.rows.map((r) => r.id);
      const seqOf = new Map(
        (stmt('SELECT id, seq FROM memories WHERE id IN (SELECT value FROM json_each(?))').all(JSON.stringify(ids)) as Array<{ id: string; seq: number }>).map((r) => [r.id, r.seq]),
      );
      for (const r of page.rows) {
        const seq = seqOf.get(r.id);
        if (seq !== undefined) keyword.set(seq, r.score ?? 0);
      }
    }
  }

  // Vector list: the filter's memories (or all), minus what the hard parts of the query rule out.
  const hard = hardConstraints(stmt, parsed);
  let only: Iterable<number> | null = hard.only;
  if (hasFilter(query.filter)) {
    const allowed = filteredSeqs(stmt, query.filter);
    only = hard.only ? allowed.filter((s) => hard.only?.has(s)) : allowed;
  }
  const semantic = cache.top(q, K, only, hard.except);

  const candidates = new Map<number, FusionCandidate<number>>();
  for (const [seq, score] of keyword) candidates.set(seq, { key: seq, keyword: score, cosine: cache.cosine(seq, q), order: seq });
  for (const s of semantic) {
    const c = candidates.get(s.seq);
    if (c) c.semanticHit = true;
    else candidates.set(s.seq, { key: s.seq, cosine: s.score, semanticHit: true, order: s.seq });
  }
  if (mode === 'hybrid') addNeighbours(stmt, candidates);
  const fused = fuse([...candidates.values()], mode);
  const pageOf = fused.slice(query.offset, query.offset + query.limit);
  const rows = pageRows(stmt, pageOf, parsed);
  return { rows, total: fused.length };
}

/** Each candidate's session neighbours (fusion.ts): the memory just before and just after it, same project and agent, close in time. */
function addNeighbours(stmt: Stmt, candidates: Map<number, FusionCandidate<number>>): void {
  if (candidates.size === 0) return;
  const rows = stmt('SELECT seq, project, agent, created_at FROM memories WHERE seq IN (SELECT value FROM json_each(?))').all(JSON.stringify([...candidates.keys()])) as Array<{
    seq: number;
    project: string | null;
    agent: string | null;
    created_at: number;
  }>;
  const before = stmt(
    'SELECT seq, created_at FROM memories WHERE project IS @project AND agent IS @agent AND created_at <= @at AND seq < @seq ORDER BY created_at DESC, seq DESC LIMIT 1',
  );
  const after = stmt('SELECT seq, created_at FROM memories WHERE project IS @project AND agent IS @agent AND created_at >= @at AND seq > @seq ORDER BY created_at, seq LIMIT 1');
  for (const r of rows) {
    const c = candidates.get(r.seq);
    if (!c) continue;
    const p = { project: r.project, agent: r.agent, at: r.created_at, seq: r.seq };
    const near: number[] = [];
    for (const n of [before.get(p), after.get(p)] as Array<{ seq: number; created_at: number } | undefined>) {
      if (n && Math.abs(n.created_at - r.created_at) <= SESSION_GAP_MS && candidates.has(n.seq)) near.push(n.seq);
    }
    if (near.length > 0) c.neighbours = near;
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
export function similarTo(stmt: Stmt, cache: VectorCache, q: Float32Array, key: string, limit: number, filter?: MemoryFilter): Array<{ id: string; title: string | null; score: number }> {
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
    const stamp = ((stmt('SELECT max(stamp) FROM memory_vectors').pluck().get() as number | null) ?? 0) + 1;
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
