import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import { Index, MetricKind, ScalarKind } from 'usearch';

/**
 * The approximate-nearest-neighbour index of one vector space, storage-neutral (decision record
 * 0030): an HNSW graph from the `usearch` library over numeric labels (the SQLite adapter's seq,
 * the MongoDB adapter's labels of its ids). The vectors themselves stay where the adapter stores
 * them (the source of truth); this index is derived from them, may be saved to a file and loaded
 * back, and is rebuilt from the store when missing or stale.
 *
 * Scores are inner products (the embedding model's vectors are normalised: cosine), as float32.
 */
export interface VectorHit {
  label: number;
  score: number;
}

/**
 * A filter as a general predicate over candidates: of these labels, the ones it lets through
 * (type, project, a query's required phrases... whatever the adapter can check for a batch).
 */
export type Accept = (labels: number[]) => Set<number> | Promise<Set<number>>;

export interface VectorIndexOptions {
  /** HNSW graph degree (usearch `connectivity`). */
  connectivity?: number;
  /** Candidates kept while inserting (usearch `expansion_add`). */
  expansionAdd?: number;
  /** Candidates kept while searching (usearch `expansion_search`): the recall/latency knob. */
  expansionSearch?: number;
}

/**
 * Defaults of decision records 0030 and 0150: on 100,000 vectors with the neighbourhoods of real
 * text, recall@10 against an exact scan is 0.971 at expansion 256 and 0.993 at 512 (≥ 0.98 needs 512).
 */
export const CONNECTIVITY = 16;
export const EXPANSION_ADD = 128;
export const EXPANSION_SEARCH = 512;
/** A filtered search asks the graph for this many times k first, then four times more each round. */
const OVERSAMPLE = 4;

/** What a saved index says about itself (the `.json` beside the index file). */
export interface SavedIndexMeta {
  /** The vector space. */
  key: string;
  dims: number;
  /** The adapter's mark of the store's state the file reflects (e.g. the highest vector stamp applied). */
  mark: number;
  /** Labels in the file (checked against the label file). */
  size: number;
  /** The index file's length and the SHA-256 of its first HEAD_BYTES (a file that is not the one saved is never handed to the library). */
  bytes: number;
  head: string;
  format: 1;
}

export class VectorIndex {
  private index: Index | null = null;
  private readonly labels = new Set<number>();
  private dimensions = 0;
  private readonly connectivity: number;
  private readonly expansionAdd: number;
  private readonly expansionSearch: number;
  /** Changes since the last save or load (an adapter saves when there are some). */
  changes = 0;

  constructor(opts: VectorIndexOptions = {}) {
    this.connectivity = opts.connectivity ?? CONNECTIVITY;
    this.expansionAdd = opts.expansionAdd ?? EXPANSION_ADD;
    this.expansionSearch = opts.expansionSearch ?? EXPANSION_SEARCH;
  }

  get size(): number {
    return this.labels.size;
  }

  get dims(): number {
    return this.dimensions;
  }

  has(label: number): boolean {
    return this.labels.has(label);
  }

  /** Every label held (reconciling with the store). */
  held(): IterableIterator<number> {
    return this.labels.values();
  }

  /** Forgets every vector. */
  clear(): void {
    this.index = null;
    this.labels.clear();
    this.dimensions = 0;
    this.changes++;
  }

  private make(dims: number): Index {
    return new Index({
      dimensions: dims,
      metric: MetricKind.IP,
      quantization: ScalarKind.F32,
      connectivity: this.connectivity,
      expansion_add: this.expansionAdd,
      expansion_search: this.expansionSearch,
      multi: false,
    });
  }

  /** Adds or replaces one label's vector; false (nothing stored) for a vector of another length than the index's. */
  add(label: number, vector: Float32Array): boolean {
    if (this.dimensions === 0) {
      if (vector.length === 0) return false;
      this.dimensions = vector.length;
      this.index = this.make(vector.length);
    }
    if (vector.length !== this.dimensions) {
      this.remove(label);
      return false;
    }
    const index = this.index as Index;
    if (this.labels.has(label)) index.remove(BigInt(label));
    index.add(BigInt(label), vector, 1);
    this.labels.add(label);
    this.changes++;
    return true;
  }

  /** Adds many at once (a rebuild): the library spreads the graph's construction over `threads`. */
  addMany(labels: number[], vectors: Float32Array[], threads = 1): void {
    const fresh: number[] = [];
    const rows: Float32Array[] = [];
    for (let i = 0; i < labels.length; i++) {
      const v = vectors[i];
      if (this.dimensions === 0 && v.length > 0) {
        this.dimensions = v.length;
        this.index = this.make(v.length);
      }
      if (v.length !== this.dimensions) continue;
      if (this.labels.has(labels[i])) this.remove(labels[i]);
      fresh.push(labels[i]);
      rows.push(v);
    }
    if (fresh.length === 0) return;
    (this.index as Index).add(
      BigUint64Array.from(fresh, (l) => BigInt(l)),
      rows,
      threads,
    );
    for (const l of fresh) this.labels.add(l);
    this.changes += fresh.length;
  }

  remove(label: number): void {
    if (!this.labels.delete(label)) return;
    this.index?.remove(BigInt(label));
    this.changes++;
  }

  /**
   * The `k` labels closest to `q`, best first (ties: the higher label first). With `accept`, only
   * labels it lets through: the graph is asked for OVERSAMPLE × k candidates, and four times more
   * each round while fewer than k passed, up to the whole index, so a filter never makes it
   * return fewer than k when k pass and the graph reaches them (a rare filter reaches the whole index only when its
   * matches are that far down; the adapter searches a small filtered set exactly instead).
   */
  async search(q: Float32Array, k: number, accept?: Accept): Promise<VectorHit[]> {
    const index = this.index;
    if (!index || k <= 0 || q.length !== this.dimensions || this.labels.size === 0) return [];
    const total = this.labels.size;
    let want = accept ? Math.min(total, k * OVERSAMPLE) : Math.min(total, k);
    for (;;) {
      const m = index.search(q, want, 1);
      const hits: VectorHit[] = [];
      for (let i = 0; i < m.keys.length; i++) hits.push({ label: Number(m.keys[i]), score: Math.fround(1 - m.distances[i]) });
      const passed = accept ? await accept(hits.map((h) => h.label)) : null;
      const out = passed ? hits.filter((h) => passed.has(h.label)) : hits;
      if (out.length >= k || want >= total) {
        out.sort((a, b) => b.score - a.score || b.label - a.label);
        return out.slice(0, k);
      }
      want = Math.min(total, want * OVERSAMPLE);
    }
  }

  /**
   * Saves the index to `file` (and its labels and meta beside it), each written to a temporary
   * file and renamed, the meta last: a crash leaves the old meta, which no longer matches and
   * makes the next start rebuild rather than trust a half-written file.
   */
  save(file: string, key: string, mark: number): void {
    fs.rmSync(`${file}.json`, { force: true });
    if (this.index && this.labels.size > 0) {
      this.index.save(`${file}.tmp`);
      fs.renameSync(`${file}.tmp`, file);
    } else {
      fs.rmSync(file, { force: true });
    }
    const { bytes, head } = fingerprint(file);
    const meta: SavedIndexMeta = { key, dims: this.dimensions, mark, size: this.labels.size, bytes, head, format: 1 };
    const labels = Float64Array.from(this.labels);
    fs.writeFileSync(`${file}.labels.tmp`, Buffer.from(labels.buffer));
    fs.renameSync(`${file}.labels.tmp`, `${file}.labels`);
    fs.writeFileSync(`${file}.json.tmp`, JSON.stringify(meta));
    fs.renameSync(`${file}.json.tmp`, `${file}.json`);
    this.changes = 0;
  }

  /** Loads what save() wrote for space `key`; the meta, or null (nothing held) when missing, of another space or unreadable. */
  load(file: string, key: string): SavedIndexMeta | null {
    this.clear();
    try {
      const meta = JSON.parse(fs.readFileSync(`${file}.json`, 'utf8')) as SavedIndexMeta;
      if (meta.format !== 1 || meta.key !== key || !Number.isInteger(meta.dims) || meta.dims < 0) return null;
      const buf = fs.readFileSync(`${file}.labels`);
      const labels = new Float64Array(buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength));
      if (labels.length !== meta.size) return null;
      const print = fingerprint(file);
      if (print.bytes !== meta.bytes || print.head !== meta.head) return null;
      if (meta.size > 0) {
        const index = this.make(meta.dims);
        index.load(file);
        if (index.size() !== meta.size || index.dimensions() !== meta.dims) return null;
        this.index = index;
        this.dimensions = meta.dims;
      }
      for (const l of labels) this.labels.add(l);
      this.changes = 0;
      return meta;
    } catch {
      this.clear();
      return null;
    }
  }
}

const HEAD_BYTES = 1 << 20;

/** A file's length and the SHA-256 of its first HEAD_BYTES (0 and '' when there is none). */
function fingerprint(file: string): { bytes: number; head: string } {
  let fd: number;
  try {
    fd = fs.openSync(file, 'r');
  } catch {
    return { bytes: 0, head: '' };
  }
  try {
    const bytes = fs.fstatSync(fd).size;
    const buf = Buffer.alloc(Math.min(bytes, HEAD_BYTES));
    fs.readSync(fd, buf, 0, buf.length, 0);
    return { bytes, head: createHash('sha256').update(buf).digest('hex') };
  } finally {
    fs.closeSync(fd);
  }
}

/** q · v in float32 steps as the index scores (an exact scan of a small filtered set, a keyword hit's cosine). */
export function dot(q: Float32Array, v: Float32Array): number {
  let s = 0;
  const n = Math.min(q.length, v.length);
  for (let i = 0; i < n; i++) s += q[i] * v[i];
  return Math.fround(s);
}

/** A float32 little-endian blob (a SQLite BLOB, a MongoDB BinData's bytes) as a vector (copied: the driver may reuse it, and it need not be aligned). */
export function vectorOf(bytes: Uint8Array): Float32Array | null {
  if (bytes.byteLength === 0 || bytes.byteLength % 4 !== 0) return null;
  const v = new Float32Array(bytes.byteLength / 4);
  new Uint8Array(v.buffer).set(bytes);
  return v;
}
