import { randomBytes } from 'node:crypto';
import { Accept, BUILD_CHUNK, dot, VectorHit, VectorIndex, VectorIndexOptions, vectorOf } from '../vector/vector-index';
import type { Stmt } from './sqlite-memory-rows';

/** Saved after this many changes since the last save, once writes have paused (and at close). */
const SAVE_AFTER_CHANGES = 1_000;
const SAVE_IDLE_MS = 30_000;
/** A filtered set of at most this many memories is scored exactly from the table (no graph walk). */
export const EXACT_FILTERED_MAX = 20_000;

/**
 * The embedded adapter's vector index (decision record 0030): a VectorIndex (src/backends/vector)
 * over memory_vectors, on the main thread, one per process, persisted as a file beside the
 * database (`memstore.db.vectors`, with `.labels`, `.json` and `.rows`). memory_vectors stays the source
 * of truth; the file is a checkpoint of it:
 * - its meta names the store (`store_id` in embedding_meta, new after a reset), the vector space
 *   and the highest `stamp` it holds; at open the rows stamped after it are added, and rows gone
 *   since (deleted memories) are noticed by the row count (`vector_rows`) and removed;
 * - a missing, unreadable or foreign file (another store or space) is rebuilt from the table, a
 *   chunk per turn of the event loop (searches meanwhile see what is built so far);
 * - it is saved after SAVE_AFTER_CHANGES changes once writes pause for SAVE_IDLE_MS, and at close.
 */
export class SqliteVectorIndex {
  readonly index: VectorIndex;
  private key: string | null = null;
  private store: string | null = null;
  private stamp = 0;
  private version = -1;
  /** Seqs whose row is of another space or size (not in the graph; counted in `vector_rows`). */
  private readonly other = new Set<number>();
  private building: Promise<void> | null = null;
  private saveTimer: NodeJS.Timeout | null = null;
  private closed = false;

  /** `file`: where the index is saved; null for none (an in-memory database). */
  constructor(
    private readonly file: string | null,
    options: VectorIndexOptions = {},
  ) {
    this.index = new VectorIndex(options);
  }

  /** True once the graph holds every vector of the table (not while rebuilding). */
  get ready(): boolean {
    return this.key !== null && this.building === null;
  }

  /** Resolves when a rebuild under way is done (bench, tests). */
  async whenReady(): Promise<void> {
    while (this.building) await this.building;
  }

  /** Brings the graph up to date with the table for space `key` (cheap when nothing was written since). */
  refresh(stmt: Stmt, key: string): void {
    if (this.building) return;
    const store = this.storeId(stmt);
    const version = Number((stmt("SELECT value FROM embedding_meta WHERE key = 'vector_version'").pluck().get() as string | undefined) ?? 0);
    if (key === this.key && store === this.store && version === this.version) return;
    if (key !== this.key || store !== this.store) {
      this.open(stmt, key, store);
      if (this.building) return;
    }
    this.catchUp(stmt, key);
    this.version = version;
    this.scheduleSave();
  }

  /** The store's id (made on first use: a reset drops embedding_meta, so a new store has a new one). */
  private storeId(stmt: Stmt): string {
    const id = stmt("SELECT value FROM embedding_meta WHERE key = 'store_id'").pluck().get() as string | undefined;
    if (id) return id;
    const made = randomBytes(8).toString('hex');
    try {
      stmt("INSERT INTO embedding_meta (key, value) VALUES ('store_id', ?) ON CONFLICT (key) DO NOTHING").run(made);
    } catch {
      return 'readonly';
    }
    return (stmt("SELECT value FROM embedding_meta WHERE key = 'store_id'").pluck().get() as string | undefined) ?? made;
  }

  /** Loads the saved graph when it is this store's and space's, else rebuilds it from the table. */
  private open(stmt: Stmt, key: string, store: string): void {
    this.key = key;
    this.store = store;
    this.version = -1;
    this.other.clear();
    for (const seq of stmt('SELECT seq FROM memory_vectors WHERE model != ?').pluck().iterate(key) as Iterable<number>) this.other.add(seq);
    const meta = this.file ? this.index.load(this.file, `${store}:${key}`) : null;
    if (meta) {
      this.stamp = meta.mark;
      return;
    }
    this.index.clear();
    // The stamp first: rows written during the build are stamped after it and caught up by the refresh after it.
    const upTo = (stmt('SELECT coalesce(max(stamp), 0) FROM memory_vectors').pluck().get() as number) ?? 0;
    this.stamp = upTo;
    let after = this.buildChunk(stmt, key, upTo, 0);
    if (after === null) return;
    // A large store: a chunk per turn of the event loop, searches meanwhile seeing what is built so far.
    this.building = (async () => {
      while (after !== null) {
        await new Promise((resolve) => setImmediate(resolve));
        if (this.closed || this.key !== key) return;
        after = this.buildChunk(stmt, key, upTo, after);
      }
      this.version = -1;
      this.scheduleSave();
    })()
      .catch(() => {
        // The database closed or failed meanwhile: the next refresh starts again.
        this.key = null;
      })
      .finally(() => {
        this.building = null;
      });
  }

  /** Adds the next BUILD_CHUNK vectors of the space after seq `after` (stamped up to `upTo`); the last seq added, or null when that was all. */
  private buildChunk(stmt: Stmt, key: string, upTo: number, after: number): number | null {
    const rows = stmt('SELECT seq, vec FROM memory_vectors WHERE model = ? AND seq > ? AND stamp <= ? ORDER BY seq LIMIT ?').all(key, after, upTo, BUILD_CHUNK) as Array<{
      seq: number;
      vec: Buffer;
    }>;
    const labels: number[] = [];
    const vectors: Float32Array[] = [];
    for (const r of rows) {
      const v = vectorOf(r.vec);
      if (v) {
        labels.push(r.seq);
        vectors.push(v);
      }
    }
    this.index.addMany(labels, vectors, 0);
    return rows.length < BUILD_CHUNK ? null : rows[rows.length - 1].seq;
  }

  /** The rows stamped since the last refresh; then the rows deleted since, when the count says there are some. */
  private catchUp(stmt: Stmt, key: string): void {
    for (const r of stmt('SELECT seq, model, stamp, vec FROM memory_vectors WHERE stamp > ? ORDER BY stamp').iterate(this.stamp) as Iterable<{
      seq: number;
      model: string;
      stamp: number;
      vec: Buffer;
    }>) {
      this.stamp = Math.max(this.stamp, r.stamp);
      const v = r.model === key ? vectorOf(r.vec) : null;
      if (v && this.index.add(r.seq, v)) this.other.delete(r.seq);
      else {
        this.index.remove(r.seq);
        this.other.add(r.seq);
      }
    }
    const rows = Number((stmt("SELECT value FROM embedding_meta WHERE key = 'vector_rows'").pluck().get() as string | undefined) ?? 0);
    if (rows !== this.index.size + this.other.size) this.dropDeleted(stmt);
  }

  private dropDeleted(stmt: Stmt): void {
    const present = new Set(stmt('SELECT seq FROM memory_vectors').pluck().all() as number[]);
    for (const seq of [...this.index.held()]) if (!present.has(seq)) this.index.remove(seq);
    for (const seq of [...this.other]) if (!present.has(seq)) this.other.delete(seq);
  }

  private scheduleSave(): void {
    if (!this.file || this.index.changes < SAVE_AFTER_CHANGES) return;
    if (this.saveTimer) clearTimeout(this.saveTimer);
    this.saveTimer = setTimeout(() => {
      this.saveTimer = null;
      try {
        this.save();
      } catch {
        // A failed save costs only a longer next start (the table is the truth).
      }
    }, SAVE_IDLE_MS);
    this.saveTimer.unref();
  }

  /** Writes the checkpoint now (at close; after a pause in writes). */
  save(): void {
    if (!this.file || this.key === null || this.store === null || this.building || this.index.changes === 0) return;
    this.index.save(this.file, `${this.store}:${this.key}`, this.stamp);
  }

  /** Forgets the graph (the store was reset); the next refresh rebuilds it. */
  reset(): void {
    this.key = null;
    this.store = null;
    this.index.clear();
  }

  /** Saves and stops (the database is closing). */
  close(): void {
    if (this.saveTimer) clearTimeout(this.saveTimer);
    this.saveTimer = null;
    try {
      this.save();
    } catch {
      // See scheduleSave.
    }
    this.closed = true;
  }

  /**
   * The `k` memories closest to `q` among those `accept` lets through. `allowed`, when the caller
   * can list the filter's memories cheaply and there are few (≤ EXACT_FILTERED_MAX), are scored
   * exactly from the table instead of walking the graph.
   */
  async top(stmt: Stmt, q: Float32Array, k: number, accept?: Accept, allowed?: () => number[] | null): Promise<VectorHit[]> {
    const few = accept && allowed ? allowed() : null;
    if (few) return this.exact(stmt, q, k, few);
    return this.index.search(q, k, accept);
  }

  /** q · each of `seqs`' vectors of the space, from the table. */
  cosines(stmt: Stmt, q: Float32Array, seqs: number[]): Map<number, number> {
    const out = new Map<number, number>();
    if (seqs.length === 0 || this.key === null) return out;
    const rows = stmt('SELECT seq, vec FROM memory_vectors WHERE model = ? AND seq IN (SELECT value FROM json_each(?))').all(this.key, JSON.stringify(seqs)) as Array<{ seq: number; vec: Buffer }>;
    for (const r of rows) {
      const v = vectorOf(r.vec);
      if (v && v.length === q.length) out.set(r.seq, dot(q, v));
    }
    return out;
  }

  private exact(stmt: Stmt, q: Float32Array, k: number, seqs: number[]): VectorHit[] {
    const scored = [...this.cosines(stmt, q, seqs)].map(([label, score]) => ({ label, score }));
    scored.sort((a, b) => b.score - a.score || b.label - a.label);
    return scored.slice(0, k);
  }
}
