import type { MongoModels } from './mongo-document-database';
import { dotAt, dotsAt } from '../sqlite/sqlite-vector-ivf';
import { META, toVector, VECTOR_WRITES } from './mongo-vectors';

/** Vectors stored up to this long before the last refresh are read again (clock skew between instances, writes in flight). */
export const VECTOR_SKEW_MS = 5_000;
/** Documents per cursor batch of the first load. */
const LOAD_BATCH = 1_000;

export interface VectorHit {
  id: string;
  score: number;
  /** createdAt (ms): the tie-break, newest first. */
  order: number;
}

/**
 * The in-process copy of one vector space's vectors on MongoDB (README "Hybrid search"), one per
 * MongoDocumentDatabase: ids and vectors in one growable Float32Array (slot i at i × dims), each
 * slot's createdAt, and a map id → slot. A deleted memory frees its slot; the arrays are compacted
 * when half the slots are free. A re-embedded memory's vector is overwritten in its slot.
 *
 * The first sync of a space loads every memory with `vec_model: key`: the server's at connection
 * (MongoOptions.preloadVectors), elsewhere the first vector search's; a sync that arrives during
 * that load waits for it. Every search then reads
 * the count of vector writes (one document by _id, bumped by storeVector after each vector); when
 * it has moved, it reads the vectors stored since its previous refresh (`vec_at`, set by
 * storeVector, ≥ that refresh's start − VECTOR_SKEW_MS). So a search on an unchanged store costs
 * the server one point read, whatever its size (FerretDB scans a collection for the `vec_at` query). Deletes by this instance free the slot at once; a memory
 * deleted by another instance is freed when a search finds its document gone (mongo-vectors.ts).
 */
export class MongoVectorCache {
  private key: string | null = null;
  private dims = 0;
  private data = new Float32Array(0);
  private ids: Array<string | null> = [];
  private at = new Float64Array(0);
  private slotOf = new Map<string, number>();
  private used = 0;
  private free = 0;
  private watermark = 0;
  /** The vector-write count (META) at the last read: while it stays, there is nothing new to read. */
  private writes = -1;
  private loading: Promise<void> | null = null;
  private epoch = 0;

  /** Forgets everything (another vector space, a cleared collection, a closed database). */
  reset(): void {
    this.key = null;
    this.dims = 0;
    this.data = new Float32Array(0);
    this.ids = [];
    this.at = new Float64Array(0);
    this.slotOf.clear();
    this.used = 0;
    this.free = 0;
    this.watermark = 0;
    this.writes = -1;
    this.loading = null;
    this.epoch++;
  }

  /** Live vectors held. */
  get size(): number {
    return this.slotOf.size;
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
    // One read by _id per search; the vectors stored since (an indexed query) only when the count moved.
    const writes = await vectorWrites(m);
    if (writes === this.writes) return;
    await this.read(m, key, { vec_at: { $gte: this.watermark - VECTOR_SKEW_MS } });
    if (this.epoch === epoch) this.writes = Math.max(this.writes, writes);
  }

  private async read(m: MongoModels, key: string, extra: Record<string, unknown>): Promise<void> {
    const epoch = this.epoch;
    const started = Date.now();
    const cursor = m.memories.collection.find({ vec_model: key, ...extra } as never, { projection: { _id: 1, vec: 1, createdAt: 1 }, batchSize: LOAD_BATCH });
    for await (const d of cursor as AsyncIterable<{ _id: string; vec: unknown; createdAt: Date }>) {
      if (this.epoch !== epoch) {
        await cursor.close();
        return;
      }
      const v = toVector(d.vec);
      if (v) this.put(d._id, v, new Date(d.createdAt).getTime());
    }
    if (this.epoch === epoch) this.watermark = Math.max(this.watermark, started);
  }

  /** Adds or overwrites one memory's vector (one of another length than the space's is ignored). */
  put(id: string, v: Float32Array, createdAt: number): void {
    if (this.dims === 0) this.dims = v.length;
    if (v.length !== this.dims) return;
    let slot = this.slotOf.get(id);
    if (slot === undefined) {
      if (this.used * this.dims >= this.data.length) this.grow();
      slot = this.used++;
      this.slotOf.set(id, slot);
      this.ids[slot] = id;
    }
    this.data.set(v, slot * this.dims);
    this.at[slot] = createdAt;
  }

  /** Frees the slots of deleted memories. */
  drop(ids: Iterable<string>): void {
    for (const id of ids) {
      const slot = this.slotOf.get(id);
      if (slot === undefined) continue;
      this.slotOf.delete(id);
      this.ids[slot] = null;
      this.free++;
    }
    if (this.free > 64 && this.free * 2 >= this.used) this.compact();
  }

  /** The score of one memory's vector against q (undefined when not held): as top() scores it (a float32). */
  score(q: Float32Array, id: string): number | undefined {
    const slot = this.slotOf.get(id);
    return slot === undefined || q.length !== this.dims ? undefined : Math.fround(dotAt(q, this.data, slot * this.dims));
  }

  /**
   * The best `k` by dot product with q (exact), best first, newest first on ties: over every held
   * vector, or only over `only` (the ids a filter let through). The slots are scored four per
   * pass over q (dotsAt), then kept or not one by one.
   */
  top(q: Float32Array, k: number, only?: Iterable<string>): VectorHit[] {
    if (k <= 0 || q.length !== this.dims) return [];
    let slots: Int32Array;
    if (only) {
      const held: number[] = [];
      for (const id of only) {
        const slot = this.slotOf.get(id);
        if (slot !== undefined) held.push(slot);
      }
      slots = Int32Array.from(held);
    } else {
      slots = new Int32Array(this.used);
      let n = 0;
      for (let slot = 0; slot < this.used; slot++) if (this.ids[slot] !== null) slots[n++] = slot;
      slots = slots.subarray(0, n);
    }
    const n = slots.length;
    const scores = new Float32Array(n);
    dotsAt(q, this.data, slots, n, scores);
    const best: VectorHit[] = [];
    for (let t = 0; t < n; t++) {
      const slot = slots[t];
      const s = scores[t];
      const order = this.at[slot];
      if (best.length === k) {
        const worst = best[k - 1];
        if (s < worst.score || (s === worst.score && order <= worst.order)) continue;
        best.pop();
      }
      let i = best.length;
      while (i > 0 && (best[i - 1].score < s || (best[i - 1].score === s && best[i - 1].order < order))) i--;
      best.splice(i, 0, { id: this.ids[slot] as string, score: s, order });
    }
    return best;
  }

  private grow(): void {
    const slots = Math.max(1024, this.used * 2);
    const data = new Float32Array(slots * this.dims);
    data.set(this.data.subarray(0, this.used * this.dims));
    const at = new Float64Array(slots);
    at.set(this.at.subarray(0, this.used));
    this.data = data;
    this.at = at;
  }

  private compact(): void {
    let w = 0;
    for (let r = 0; r < this.used; r++) {
      const id = this.ids[r];
      if (id === null) continue;
      if (w !== r) {
        this.data.copyWithin(w * this.dims, r * this.dims, (r + 1) * this.dims);
        this.at[w] = this.at[r];
        this.ids[w] = id;
        this.slotOf.set(id, w);
      }
      w++;
    }
    this.ids.length = w;
    this.used = w;
    this.free = 0;
  }
}

async function vectorWrites(m: MongoModels): Promise<number> {
  const doc = await m.memories.db.collection<{ _id: string; n?: number }>(META).findOne({ _id: VECTOR_WRITES });
  return doc?.n ?? 0;
}
