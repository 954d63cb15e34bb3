import type Database from 'better-sqlite3';
import { ALL_NAMESPACES } from '../../namespaces/namespace';
import type { EmbeddingQueue } from '../ports/embedding-queue.port';
import { MemoryIndex } from '../ports/memory-index.port';
import {
  CasResult,
  EmbeddingJob,
  EmbeddingProgress,
  ListQuery,
  MEMORY_SCOPES,
  MEMORY_TYPES,
  MemoryDoc,
  MemoryFilter,
  MemoryPage,
  MemoryStats,
  SearchQuery,
  SimilarHit,
  VersionEntry,
} from '../ports/memory.model';
import { translateSqliteError } from './sqlite-errors';
import { FtsMaintenance } from './sqlite-fts-maintenance';
import { listPage } from './sqlite-list-planner';
import { createMemorySchema, resetMemorySchema } from './sqlite-memory-schema';
import { DbRow, Params, previewOf, ROW_COLUMNS, StatementCache, toRow } from './sqlite-memory-rows';
import { withoutIdleSupersession } from './sqlite-supersession';
import { DEFAULT_EXACT_RANKING_BUDGET, DEFAULT_TERM_WINDOW, rankedFullTextSearch, RankingOptions } from './sqlite-ranking';
import { SqliteMemoryVersions } from './sqlite-memory-versions';
import { namespaceUsageRows } from './sqlite-namespace-usage';
import type { NamespaceUsage, NamespaceUsageQuery } from '../ports/memory-index.port';
import { FUSION_CANDIDATES } from '../../../libs/search-query';
import type { VectorHit, VectorIndexOptions } from '../vector/vector-index';
import { EXACT_FILTERED_MAX, SqliteVectorIndex } from './sqlite-vector-index';
import { claimJobs, failJob, progress, similarRows, storeJobVector, useVectorSpace, vectorFilter, vectorSearch } from './sqlite-vectors';

export { PREVIEW_CHARS, previewOf } from './sqlite-memory-rows';
export { DEFAULT_EXACT_RANKING_BUDGET, DEFAULT_TERM_WINDOW } from './sqlite-ranking';

export interface SqliteMemoryIndexOptions {
  /**
   * How many of the newest matches of each query term the ranked search reads. Below it (a term
   * matching fewer memories) ranking and totals are exact; above it, relevance is computed among
   * the newest `termWindow` matches of that term and the total is an estimate.
   */
  termWindow?: number;
  /**
   * When every term is complete (matches fewer than `termWindow` memories) and the terms have at
   * most this many matches together, FTS5's bm25() ranks them instead (term frequency and length
   * normalisation included; its cost grows with the matches, so only for small sets). 0 = never.
   */
  exactRankingBudget?: number;
  /**
   * Create or upgrade the schema (default). False for a connection that only reads (a search
   * worker's): the schema is the main connection's business.
   */
  schema?: boolean;
  /**
   * Tidy the full-text index this long after the last write (ms; see maintainStep), or never when
   * null. Default: 1000 on a connection that owns the schema, null otherwise.
   */
  maintenanceIdleMs?: number | null;
  /** The vector index's settings (default the library's; a test walks the graph at any size with exactMax 0). */
  vectorIndex?: VectorIndexOptions;
}

/**
 * Runs searches elsewhere (SqliteSearchPool); null when it cannot take one now (then the index
 * searches itself). `semantic`: a vector search's hits from the vector index (main thread).
 */
export interface SearchDelegate {
  search(query: SearchQuery, semantic?: VectorHit[] | null): Promise<MemoryPage> | null;
}

/** A create waiting for the next group commit (SqliteMemoryIndex.insert). */
interface PendingInsert {
  doc: MemoryDoc;
  resolve: () => void;
  reject: (e: unknown) => void;
}

/** The namespace condition of a statement taking (ns, ns): one namespace, or every one for ALL_NAMESPACES (operator tools). */
const NS_IS = "(namespace = ? OR ? = '*')";

const MMAP_BYTES = 1024 * 1024 * 1024;
const DEFAULT_MAINTENANCE_IDLE_MS = 1000;

/**
 * MemoryIndex on the embedded SQLite file: a plain table with an index for every filter and for
 * newest-first listing, a tag table for the all-tags filter, and an external-content FTS5 table
 * (porter stemming, case and accent folding) kept in step by triggers. The schema and its
 * upgrades are in sqlite-memory-schema.ts, full-text segment merging in sqlite-fts-maintenance.ts,
 * list pages in sqlite-list-planner.ts and search ranking in sqlite-ranking.ts.
 */
export class SqliteMemoryIndex extends MemoryIndex implements EmbeddingQueue {
  /** Every write is one in-process transaction: a write that threw rolled back. */
  override readonly failedWritesRolledBack = true;
  private readonly statements: StatementCache;
  private readonly stmt: (sql: string) => Database.Statement;
  private readonly ranking: RankingOptions;
  private readonly maintenance: FtsMaintenance;
  private searchDelegate: SearchDelegate | null = null;
  /** The process's vector index (sqlite-vector-index.ts), on the main thread; none on a search worker's connection. */
  private readonly vectors: SqliteVectorIndex;
  /** Creates waiting for the next group commit (see insert). */
  private pendingInserts: PendingInsert[] = [];
  /** One create in its own transaction, or in a savepoint when called inside one. */
  private readonly insertOne: (doc: MemoryDoc) => void;

  constructor(
    private readonly db: Database.Database,
    opts: SqliteMemoryIndexOptions = {},
  ) {
    super();
    this.statements = new StatementCache(db);
    this.stmt = (sql) => this.statements.get(sql);
    this.ranking = {
      termWindow: Math.max(1, opts.termWindow ?? DEFAULT_TERM_WINDOW),
      exactRankingBudget: Math.max(0, opts.exactRankingBudget ?? DEFAULT_EXACT_RANKING_BUDGET),
    };
    // Memory-mapped reads: rows carry their content, so a page read through read(2) per row made
    // filtered lists ~10x slower at 100,000 memories. (Per connection; only address space.)
    this.db.pragma(`mmap_size = ${MMAP_BYTES}`);
    if (opts.schema !== false) createMemorySchema(this.db);
    const idleMs = opts.maintenanceIdleMs === undefined ? (opts.schema === false ? null : DEFAULT_MAINTENANCE_IDLE_MS) : opts.maintenanceIdleMs;
    this.maintenance = new FtsMaintenance(this.db, this.stmt, idleMs);
    this.insertOne = this.db.transaction((doc: MemoryDoc) => this.writeNew(doc));
    const file = opts.schema !== false && db.name && db.name !== ':memory:' && !db.memory ? `${db.name}.vectors` : null;
    this.vectors = new SqliteVectorIndex(file, opts.vectorIndex);
    // An index left fragmented (by a bulk import, or writes before a restart) is tidied too.
    this.maintenance.schedule();
  }

  /** One bounded step of full-text segment merging; true while work remains (see FtsMaintenance). */
  maintainStep(pages?: number): boolean {
    return this.maintenance.step(pages);
  }

  /** Segments in each full-text index (tests, diagnostics). */
  ftsSegments(): { fts: number; titleTags: number } {
    return this.maintenance.segments();
  }

  /** No more maintenance (the connection is about to close); creates still waiting are committed first. */
  stopMaintenance(): void {
    this.flushInserts();
    this.maintenance.stop();
    this.guard(() => this.vectors.close());
  }

  /** Searches go to `delegate` (worker threads with their own connections) while it takes them. */
  delegateSearches(delegate: SearchDelegate | null): void {
    this.searchDelegate = delegate;
  }

  override searchMode(): string {
    return 'fts5';
  }

  /**
   * Group commit: the creates that reach the index in one turn of the event loop are written in
   * one transaction, each in its own savepoint (a refused row fails only its own create). A commit
   * writes every page it touched to the WAL, ~58 for one memory (its row, fifteen index entries,
   * its tags, two full-text segments, the queue and the counts); creates committed together share
   * most of them. A create is still answered only after its commit.
   */
  override insert(doc: MemoryDoc): Promise<void> {
    return new Promise((resolve, reject) => {
      if (this.pendingInserts.push({ doc, resolve, reject }) === 1) setImmediate(() => this.flushInserts());
    });
  }

  /** Commits the waiting creates (see insert); each one's promise settles after it. */
  private flushInserts(): void {
    const batch = this.pendingInserts;
    if (batch.length === 0) return;
    this.pendingInserts = [];
    this.maintenance.schedule();
    const failed = new Map<PendingInsert, unknown>();
    try {
      if (batch.length === 1) {
        this.insertOne(batch[0].doc);
      } else {
        this.db.transaction(() => {
          for (const p of batch) {
            try {
              this.insertOne(p.doc); // nested: a savepoint
            } catch (e) {
              // An error that ended the whole transaction (I/O, disk full) fails every create in it.
              if (!this.db.inTransaction) throw e;
              failed.set(p, e);
            }
          }
        })();
      }
    } catch (e) {
      for (const p of batch) if (!failed.has(p)) failed.set(p, e);
    }
    for (const p of batch) {
      if (failed.has(p)) p.reject(this.translate(failed.get(p)));
      else p.resolve();
    }
  }

  /** One transaction for the whole batch. */
  override async insertMany(docs: MemoryDoc[]): Promise<void> {
    this.maintenance.schedule();
    this.guard(() =>
      this.db.transaction(() => {
        for (const doc of docs) this.writeNew(doc);
      })(),
    );
  }

  /** A new memory's row, tags and first version (inside the caller's transaction). */
  private writeNew(doc: MemoryDoc): void {
    const res = this.stmt(
      `INSERT INTO memories (id, namespace, title, type, scope, tags, tag_text, agent, project, content, preview, created_at, updated_at, version, object_key, author, superseded_by, valid_to)
       VALUES (@id, @namespace, @title, @type, @scope, @tags, @tag_text, @agent, @project, @content, @preview, @created_at, @updated_at, @version, @object_key, @author, @superseded_by, @valid_to)`,
    ).run(this.params(doc));
    this.writeTags(Number(res.lastInsertRowid), doc);
    this.versions.record(doc);
  }

  override async replace(doc: MemoryDoc): Promise<boolean> {
    this.maintenance.schedule();
    return this.guard(() =>
      this.db.transaction(() => {
        const row = this.stmt('SELECT seq FROM memories WHERE id = ? AND namespace = ?').get(doc.id, doc.namespace) as { seq: number } | undefined;
        if (!row) return false;
        this.replaceRow(row.seq, doc);
        return true;
      })(),
    );
  }

  private replaceRow(seq: number, doc: MemoryDoc): void {
    this.stmt(
      `UPDATE memories SET title = @title, type = @type, scope = @scope, tags = @tags, tag_text = @tag_text, agent = @agent,
         project = @project, content = @content, preview = @preview, created_at = @created_at, updated_at = @updated_at,
         version = @version, object_key = @object_key, author = @author, superseded_by = @superseded_by, valid_to = @valid_to
       WHERE id = @id AND namespace = @namespace`,
    ).run(this.params(doc));
    this.stmt('DELETE FROM memory_tags WHERE seq = ?').run(seq);
    this.writeTags(seq, doc);
  }

  // --- versions (issue 9; history rows in sqlite-memory-versions.ts) ---

  private versionsNow?: SqliteMemoryVersions;
  private get versions(): SqliteMemoryVersions {
    return (this.versionsNow ??= new SqliteMemoryVersions(this.db));
  }

  override async update(doc: MemoryDoc, expected: number, keep: number): Promise<CasResult> {
    this.maintenance.schedule();
    return this.guard(() =>
      this.db.transaction((): CasResult => {
        const row = this.stmt('SELECT seq, version FROM memories WHERE id = ? AND namespace = ?').get(doc.id, doc.namespace) as { seq: number; version: number } | undefined;
        if (!row) return { status: 'missing' };
        if (row.version !== expected) return { status: 'conflict', current: row.version };
        this.replaceRow(row.seq, doc);
        this.versions.record(doc);
        return { status: 'ok', released: this.versions.prune(doc.id, keep) };
      })(),
    );
  }

  override async remove(ns: string, id: string, expected?: number): Promise<CasResult> {
    this.maintenance.schedule();
    return this.guard(() =>
      this.db.transaction((): CasResult => {
        const row = this.stmt(`SELECT version, object_key FROM memories WHERE id = ? AND ${NS_IS}`).get(id, ns, ns) as { version: number; object_key: string | null } | undefined;
        if (!row) return { status: 'missing' };
        if (expected !== undefined && row.version !== expected) return { status: 'conflict', current: row.version };
        const released = this.releasedBy(id, row.object_key);
        this.stmt('DELETE FROM memories WHERE id = ?').run(id);
        return { status: 'ok', released };
      })(),
    );
  }

  override async removeMany(ns: string, ids: string[]): Promise<Array<{ id: string; released: string[] }>> {
    this.maintenance.schedule();
    return this.guard(() =>
      this.db.transaction(() => {
        const find = this.stmt(`SELECT object_key FROM memories WHERE id = ? AND ${NS_IS}`);
        const del = this.stmt('DELETE FROM memories WHERE id = ?');
        const out: Array<{ id: string; released: string[] }> = [];
        for (const id of new Set(ids)) {
          const row = find.get(id, ns, ns) as { object_key: string | null } | undefined;
          if (!row) continue;
          const released = this.releasedBy(id, row.object_key);
          del.run(id);
          out.push({ id, released });
        }
        return out;
      })(),
    );
  }

  /** Every object key a memory references: its kept versions, its current file and the file from before versions. */
  private releasedBy(id: string, current: string | null): string[] {
    return [...new Set([...this.versions.keys(id), ...(current ? [current] : []), `memories/${id}.md`])];
  }

  /** Versions are rows of their memory (same id): a memory outside `ns` has none to show. */
  override async history(ns: string, id: string, limit: number, offset: number): Promise<{ rows: VersionEntry[]; total: number }> {
    return this.guard(() => {
      if (ns !== ALL_NAMESPACES && !this.stmt('SELECT 1 FROM memories WHERE id = ? AND namespace = ?').get(id, ns)) return { rows: [], total: 0 };
      return this.versions.list(id, limit, offset);
    });
  }

  override async addHistory(ns: string, id: string, entries: VersionEntry[]): Promise<void> {
    this.guard(() =>
      this.db.transaction(() => {
        if (!this.stmt(`SELECT 1 FROM memories WHERE id = ? AND ${NS_IS}`).get(id, ns, ns)) return;
        for (const e of entries) this.versions.add(id, e);
      })(),
    );
  }

  override async get(ns: string, id: string): Promise<MemoryDoc | null> {
    return this.guard(() => {
      const row = this.stmt(`SELECT ${ROW_COLUMNS}, m.content FROM memories m WHERE m.id = ? AND ${NS_IS.replace('namespace', 'm.namespace')}`).get(id, ns, ns) as DbRow | undefined;
      if (!row) return null;
      const { snippet: _s, ...rest } = toRow(row);
      return { ...rest, content: row.content ?? '' };
    });
  }

  override async delete(ns: string, id: string): Promise<boolean> {
    this.maintenance.schedule();
    return this.guard(() => this.stmt(`DELETE FROM memories WHERE id = ? AND ${NS_IS}`).run(id, ns, ns).changes > 0);
  }

  override async deleteMany(ns: string, ids: string[]): Promise<string[]> {
    this.maintenance.schedule();
    return this.guard(() =>
      this.db.transaction(() => {
        const del = this.stmt(`DELETE FROM memories WHERE id = ? AND ${NS_IS}`);
        const deleted: string[] = [];
        for (const id of new Set(ids)) if (del.run(id, ns, ns).changes > 0) deleted.push(id);
        return deleted;
      })(),
    );
  }

  override async list(query: ListQuery): Promise<MemoryPage> {
    return this.guard(() => listPage(this.stmt, { ...query, filter: withoutIdleSupersession(this.stmt, query.filter) }));
  }

  /** Search (CONTRACT §3); the ranking is described in sqlite-ranking.ts. */
  override async search(asked: SearchQuery): Promise<MemoryPage> {
    const query = { ...asked, filter: this.guard(() => withoutIdleSupersession(this.stmt, asked.filter)) };
    const semantic = isVectorSearch(query) ? await this.semanticHits(query) : null;
    if (!this.searchDelegate) return this.searchNow(query, semantic);
    return this.searchDelegate.search(query, semantic) ?? this.searchNow(query, semantic);
  }

  /** A vector search's candidates from the vector index, every filter, phrase and exclusion of the query applied. */
  private async semanticHits(query: SearchQuery): Promise<VectorHit[]> {
    try {
      this.vectors.refresh(this.stmt, query.vectorKey as string);
      const f = vectorFilter(this.stmt, query.filter, query.text, EXACT_FILTERED_MAX);
      return await this.vectors.top(this.stmt, query.vector as Float32Array, Math.max(FUSION_CANDIDATES, query.offset + query.limit), f?.accept, f?.allowed);
    } catch (e) {
      throw this.translate(e);
    }
  }

  /** Loads or rebuilds the vector index of the current space now (a serving process, at start: not on its first search). */
  preloadVectors(): void {
    this.guard(() => {
      const key = this.stmt("SELECT value FROM embedding_meta WHERE key = 'vector_space'").pluck().get() as string | undefined;
      if (key) this.vectors.refresh(this.stmt, key);
    });
  }

  /** Resolves once the vector index holds every stored vector (bench, tests). */
  whenVectorsReady(): Promise<void> {
    return this.vectors.whenReady();
  }

  /** The search itself, synchronously on this index's connection (what a search worker runs); `semantic` for a vector search. */
  searchNow(query: SearchQuery, semantic: VectorHit[] | null = null): MemoryPage {
    return this.guard(() => (isVectorSearch(query) ? vectorSearch(this.stmt, this.ranking, query, semantic ?? []) : rankedFullTextSearch(this.stmt, this.ranking, query)));
  }

  // --- vectors and the embedding queue (sqlite-vectors.ts) ---

  async useVectorSpace(key: string): Promise<boolean> {
    return this.guard(() => useVectorSpace(this.db, this.stmt, key));
  }

  async claimEmbeddingJobs(owner: string, max: number, leaseMs: number): Promise<EmbeddingJob[]> {
    return this.guard(() => claimJobs(this.db, this.stmt, owner, max, leaseMs));
  }

  async storeVector(job: EmbeddingJob, key: string, vector: Float32Array): Promise<void> {
    this.guard(() => storeJobVector(this.db, this.stmt, job, key, vector));
  }

  async failEmbeddingJob(job: EmbeddingJob, error: string, retryAt: Date): Promise<void> {
    this.guard(() => failJob(this.stmt, job, error, retryAt));
  }

  async embeddingProgress(key: string | null): Promise<EmbeddingProgress> {
    return this.guard(() => progress(this.stmt, key));
  }

  /** Duplicate hints: the vector index's closest memories (filtered like a search). */
  async similar(vector: Float32Array, key: string, limit: number, filter: MemoryFilter): Promise<SimilarHit[]> {
    try {
      this.vectors.refresh(this.stmt, key);
      const f = vectorFilter(this.stmt, filter && withoutIdleSupersession(this.stmt, filter), undefined, EXACT_FILTERED_MAX);
      const top = await this.vectors.top(this.stmt, vector, limit, f?.accept, f?.allowed);
      return similarRows(this.stmt, top, filter.namespace);
    } catch (e) {
      throw this.translate(e);
    }
  }

  override async stats(ns: string): Promise<MemoryStats> {
    return this.guard(() => {
      const counts = this.stmt(`SELECT dim, key, n FROM memory_counts WHERE n > 0 AND ${NS_IS}`).all(ns, ns) as Array<{ dim: string; key: string; n: number }>;
      const byType: Record<string, number> = Object.fromEntries(MEMORY_TYPES.map((t) => [t, 0]));
      const byScope: Record<string, number> = Object.fromEntries(MEMORY_SCOPES.map((x) => [x, 0]));
      // Keys are user values ('__proto__', 'constructor'...): count in objects without a prototype.
      const byProject: Record<string, number> = Object.create(null) as Record<string, number>;
      const byAgent: Record<string, number> = Object.create(null) as Record<string, number>;
      const target: Record<string, Record<string, number>> = { type: byType, scope: byScope, project: byProject, agent: byAgent };
      let total = 0;
      for (const { dim, key, n } of counts) {
        const k = (dim === 'project' || dim === 'agent') && key === '' ? '(none)' : key;
        target[dim][k] = (target[dim][k] ?? 0) + n;
        if (dim === 'type') total += n;
      }
      return { total, byType, byScope, byProject, byAgent };
    });
  }

  override async count(ns: string): Promise<number> {
    // Two statements, so that a namespace's count walks its own index entries.
    return this.guard(
      () => (ns === ALL_NAMESPACES ? this.stmt('SELECT count(*) FROM memories').pluck().get() : this.stmt('SELECT count(*) FROM memories WHERE namespace = ?').pluck().get(ns)) as number,
    );
  }

  override async namespaceUsage(query: NamespaceUsageQuery): Promise<NamespaceUsage[]> {
    return this.guard(() => namespaceUsageRows(this.stmt, query));
  }

  override async clear(): Promise<void> {
    this.maintenance.schedule();
    this.guard(() => {
      this.statements.clear();
      resetMemorySchema(this.db);
      this.vectors.reset();
    });
  }

  // --- helpers ---

  private params(doc: MemoryDoc): Params & Record<string, string | number | null> {
    return {
      id: doc.id,
      namespace: doc.namespace,
      title: doc.title,
      type: doc.type,
      scope: doc.scope,
      tags: JSON.stringify(doc.tags),
      tag_text: doc.tags.join('\n'),
      agent: doc.agent,
      project: doc.project,
      content: doc.content,
      preview: previewOf(doc.content),
      created_at: doc.createdAt.getTime(),
      updated_at: doc.updatedAt.getTime(),
      version: doc.version ?? 1,
      object_key: doc.objectKey ?? null,
      author: doc.author ? JSON.stringify(doc.author) : null,
      superseded_by: doc.supersededBy && doc.validTo ? doc.supersededBy : null,
      valid_to: doc.supersededBy && doc.validTo ? doc.validTo.getTime() : null,
    } as Params & Record<string, string | number | null>;
  }

  private writeTags(seq: number, doc: MemoryDoc): void {
    const ins = this.stmt('INSERT OR IGNORE INTO memory_tags (tag, created_at, id, seq, type, scope, agent, project, namespace) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)');
    for (const t of doc.tags) ins.run(t, doc.createdAt.getTime(), doc.id, seq, doc.type, doc.scope, doc.agent ?? null, doc.project ?? null, doc.namespace);
  }

  /** Runs a synchronous SQLite call, translating driver errors into ours. */
  private guard<T>(fn: () => T): T {
    try {
      return fn();
    } catch (e) {
      throw this.translate(e);
    }
  }

  private translate(e: unknown): Error {
    return translateSqliteError(e, { conflict: 'A memory with this id already exists' });
  }
}

function isVectorSearch(query: SearchQuery): boolean {
  return Boolean(query.vector && query.vectorKey && query.mode !== 'keyword');
}
