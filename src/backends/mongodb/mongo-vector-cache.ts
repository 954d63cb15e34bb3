import type { MongoModels } from './mongo-models';
import { Accept, BUILD_CHUNK, VectorIndex } from '../vector/vector-index';
import { META, toVector, VECTOR_WRITES } from './mongo-vector-codec';

/** Vectors stored up to this long before the last refresh are read again (clock skew between instances, writes in flight). */
export const VECTOR_SKEW_MS = 5_000;

export interface VectorHit {
  id: string;
  score: number;
  /** createdAt (ms): the tie-break, newest first. */
  order: number;
}

/**
 * The MongoDB adapter's vector index (decision record 0030): a VectorIndex (src/backends/vector,
 * an HNSW graph) over one vector space's vectors, one per MongoDocumentDatabase, in memory (the
 * documents' `vec` stay the source of truth; this process builds the graph from them at its first
 * sync). The graph's labels are small integers given to ids here (`ids`, `labelOf`).
 *
 * The first sync of a space loads every memory with `vec_model: key`: the server's at connection
 * (MongoOptions.preloadVectors), elsewhere the first vector search's; a sync that arrives during
 * that load waits for it. Every search then reads the count of vector writes (one document by
 * _id, bumped by storeVector after each vector); when it has moved, it reads the vectors stored
 * since its previous refresh (`vec_at`, set by storeVector, ≥ that refresh's start −
 * VECTOR_SKEW_MS). Deletes by this instance remove the label at once; a memory deleted by another
 * instance is removed when a search finds its document gone (mongo-vectors.ts).
 */
export class MongoVectorCache {
  private key: string | null = null;
  private index = new VectorIndex();
  private ids: string[] = [];
  private at: number[] = [];
  private labelOf = new Map<string, number>();
  private watermark = 0;
  /** The vector-write count (META) at the last read: while it stays, there is nothing new to read. */
  private writes = -1;
  private loading: Promise<void> | null = null;
  private epoch = 0;

  /** Forgets everything (another vector space, a cleared collection, a closed database). */
  reset(): void {
    this.key = null;
    this.index = new VectorIndex();
    this.ids = [];
    this.at = [];
    this.labelOf.clear();
    this.watermark = 0;
    this.writes = -1;
    this.loading = null;
    this.epoch++;
  }

  /** Live vectors held. */
  get size(): number {
    return this.index.size;
  }

  /** Makes the copy current for `key`: the first load, else the vectors stored since the last refresh. */
  async sync(m: MongoModels, key: string): Promise<void> {
    if (this.key !== key) {
      this.reset();
      this.key = key;
    }
    const epoch = this.epoch;
    if (!this.loading) {
      this.loading = (async () => {
        const writes = await vectorWrites(m);
        await this.read(m, key, {});
        if (this.epoch === epoch) this.writes = writes;
      })().catch((e: unknown) => {
        if (this.epoch === epoch) this.loading = null;
        throw e;
      });
    }
    await this.loading;
    if (this.epoch !== epoch) return;
    const writes = await vectorWrites(m);
    if (writes === this.writes) return;
    await this.read(m, key, { vec_at: { $gte: this.watermark - VECTOR_SKEW_MS } });
    if (this.epoch === epoch) this.writes = Math.max(this.writes, writes);
  }

  private async read(m: MongoModels, key: string, extra: Record<string, unknown>): Promise<void> {
    const epoch = this.epoch;
    const started = Date.now();
    const cursor = m.memories.collection.find({ vec_model: key, ...extra } as never, { projection: { _id: 1, vec: 1, createdAt: 1 }, batchSize: BUILD_CHUNK });
    let batch: Array<{ id: string; v: Float32Array; at: number }> = [];
    const flush = () => {
      if (this.epoch === epoch) this.putMany(batch);
      batch = [];
    };
    for await (const d of cursor as AsyncIterable<{ _id: string; vec: unknown; createdAt: Date }>) {
      if (this.epoch !== epoch) {
        await cursor.close();
        return;
      }
      const v = toVector(d.vec);
      if (v) batch.push({ id: d._id, v, at: new Date(d.createdAt).getTime() });
      if (batch.length >= BUILD_CHUNK) flush();
    }
    flush();
    if (this.epoch === epoch) this.watermark = Math.max(this.watermark, started);
  }

  private label(id: string): number {
    let l = this.labelOf.get(id);
    if (l === undefined) {
      l = this.ids.length;
      this.ids.push(id);
      this.at.push(0);
      this.labelOf.set(id, l);
    }
    return l;
  }

  private putMany(batch: Array<{ id: string; v: Float32Array; at: number }>): void {
    if (batch.length === 0) return;
    const labels = batch.map((b) => this.label(b.id));
    batch.forEach((b, i) => (this.at[labels[i]] = b.at));
    this.index.addMany(
      labels,
      batch.map((b) => b.v),
      0,
    );
  }

  /** Adds or replaces one memory's vector (one of another length than the space's is ignored). */
  put(id: string, v: Float32Array, createdAt: number): void {
    this.putMany([{ id, v, at: createdAt }]);
  }

  /** Removes the vectors of deleted memories. */
  drop(ids: Iterable<string>): void {
    for (const id of ids) {
      const l = this.labelOf.get(id);
      if (l !== undefined) this.index.remove(l);
    }
  }

  /**
   * The best `k` by dot product with q, best first, newest first on ties: from the graph, with
   * `accept` (the ids a filter lets through, asked of the server for each batch of candidates).
   */
  async top(q: Float32Array, k: number, accept?: (ids: string[]) => Promise<Set<string>>): Promise<VectorHit[]> {
    const byLabel: Accept | undefined = accept
      ? async (labels) => {
          const ok = await accept(labels.map((l) => this.ids[l]));
          return new Set(labels.filter((l) => ok.has(this.ids[l])));
        }
      : undefined;
    const hits = await this.index.search(q, k, byLabel);
    return hits.map((h) => ({ id: this.ids[h.label], score: h.score, order: this.at[h.label] })).sort((a, b) => b.score - a.score || b.order - a.order);
  }
}

async function vectorWrites(m: MongoModels): Promise<number> {
  const doc = await m.memories.db.collection<{ _id: string; n?: number }>(META).findOne({ _id: VECTOR_WRITES });
  return doc?.n ?? 0;
}
