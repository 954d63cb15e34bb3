import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import { exactSearch, Index, Matches, MetricKind, ScalarKind } from 'usearch';

/**
 * The approximate-nearest-neighbour index of one vector space, storage-neutral (decision record
 * 0030): an HNSW graph from the `usearch` library over numeric labels (the SQLite adapter's seq,
 * the MongoDB adapter's labels of its ids). The vectors themselves stay where the adapter stores
 * them (the source of truth); this index is derived from them, may be saved to a file and loaded
 * back, and is rebuilt from the store when missing or stale.
 *
 * Scores are inner products (the embedding model's vectors are normalised: cosine), as float32.
 * The graph keeps its vectors as 16-bit floats (decision record 0167): its scores differ from
 * the float32 inner product by less than 0.001.
 *
 * Up to EXACT_MAX vectors, a search scans them all exactly (usearch's SIMD exactSearch over a copy
 * kept here, decision record 0159): the graph's walk is approximate, and on a store that small the
 * scan costs no more than the walk. Beyond it the copy is dropped and searches walk the graph.
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

/** How the graph stores its vectors: 16-bit floats (the default, decision record 0167), 8-bit integers or float32. */
export type GraphScalar = 'f16' | 'i8' | 'f32';

export interface VectorIndexOptions {
  /** HNSW graph degree (usearch `connectivity`). */
  connectivity?: number;
  /** Candidates kept while inserting (usearch `expansion_add`). */
  expansionAdd?: number;
  /** Candidates kept while searching (usearch `expansion_search`): the recall/latency knob. */
  expansionSearch?: number;
  /** Up to this many vectors, searches are exact scans (default EXACT_MAX; 0: always the graph). */
  exactMax?: number;
  /** The graph's vectors (default GRAPH_SCALAR). */
  scalar?: GraphScalar;
}

/**
 * Decision record 0168: on the bench's 100,000 memories, a graph of degree 24 built with expansion
 * 192 finds 0.988 of the exact top 10 at search expansion 384 in the time degree 16 (expansion 128
 * on add) needs for 0.979 at 512; the build takes about 1.5 times as long.
 */
export const CONNECTIVITY = 24;
export const EXPANSION_ADD = 192;
export const EXPANSION_SEARCH = 384;
/**
 * Up to this many vectors a search scans them exactly (decision record 0159): a copy of at most
 * EXACT_MAX × dims float32 (30 MB at 384 dims) beside the graph. At 20,000 vectors of real text
 * (384 dims) a scan took 1.4–1.8 ms per query on one busy core, the graph's walk 2.6–4.6 ms.
 */
export const EXACT_MAX = 20_000;
/**
 * Decision record 0167: on the bench's 100,000 memories a graph of 16-bit floats has the recall
 * of one of float32 in half the memory, and a shorter walk (8-bit integers, for the lab only,
 * lose recall in dense clusters).
 */
export const GRAPH_SCALAR: GraphScalar = 'f16';
/**
 * Vectors an adapter adds per turn of the event loop while it (re)builds a graph: the thread
 * serving HTTP is never held long (at 100,000 vectors on two cores: 0.19 s a chunk, 0.32 s at
 * most; decision 0168).
 */
export const BUILD_CHUNK = 500;
/** A filtered search asks the graph (or the exact scan) for this many times k first, then four times more each round. */
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
  /** The exact-scan copy (`.rows` beside the index, in the order of the label file), when the index held one. */
  rows?: { bytes: number; head: string };
  /** How the graph stores its vectors (absent: float32, a file saved before decision record 0167). */
  scalar?: GraphScalar;
  /** The graph's degree (absent: 16, a file saved before decision record 0168). */
  connectivity?: number;
  format: 1;
}

export class VectorIndex {
  private index: Index | null = null;
  private readonly labels = new Set<number>();
  private dimensions = 0;
  private readonly connectivity: number;
  private readonly expansionAdd: number;
  private readonly expansionSearch: number;
  private readonly exactMax: number;
  private readonly scalar: GraphScalar;
  /**
   * The exact-scan copy: row r holds the vector of `rowLabel[r]` (rows packed: a removal moves the
   * last row into the gap). Null once the index outgrew exactMax (until cleared or loaded again).
   */
  private rows: Float32Array | null = new Float32Array(0);
  private rowLabel: number[] = [];
  private readonly rowOf = new Map<number, number>();
  /** Changes since the last save or load (an adapter saves when there are some). */
  changes = 0;

  constructor(opts: VectorIndexOptions = {}) {
    this.connectivity = opts.connectivity ?? CONNECTIVITY;
    this.expansionAdd = opts.expansionAdd ?? EXPANSION_ADD;
    this.expansionSearch = opts.expansionSearch ?? EXPANSION_SEARCH;
    this.exactMax = opts.exactMax ?? EXACT_MAX;
    this.scalar = opts.scalar ?? GRAPH_SCALAR;
    if (this.exactMax <= 0) this.rows = null;
  }

  /** True while searches scan every vector exactly (at most exactMax held since the last clear or load). */
  get exact(): boolean {
    return this.rows !== null;
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
    this.resetRows(this.exactMax > 0);
    this.changes++;
  }

  private resetRows(keep: boolean): void {
    this.rows = keep ? new Float32Array(0) : null;
    this.rowLabel = [];
    this.rowOf.clear();
  }

  /** Copies `label`'s vector into the exact-scan rows; drops the copy when the index outgrows exactMax. */
  private keepRow(label: number, v: Float32Array): void {
    if (!this.rows) return;
    let row = this.rowOf.get(label);
    if (row === undefined) {
      if (this.rowLabel.length >= this.exactMax) {
        this.resetRows(false);
        return;
      }
      row = this.rowLabel.length;
      this.rowLabel.push(label);
      this.rowOf.set(label, row);
      const need = (row + 1) * this.dimensions;
      if (need > this.rows.length) {
        const grown = new Float32Array(Math.min(this.exactMax * this.dimensions, Math.max(need, 2 * this.rows.length, 1_024 * this.dimensions)));
        grown.set(this.rows);
        this.rows = grown;
      }
    }
    this.rows.set(v, row * this.dimensions);
  }

  private dropRow(label: number): void {
    const row = this.rowOf.get(label);
    if (!this.rows || row === undefined) return;
    const last = this.rowLabel.length - 1;
    const d = this.dimensions;
    if (row !== last) {
      const moved = this.rowLabel[last];
      this.rows.copyWithin(row * d, last * d, (last + 1) * d);
      this.rowLabel[row] = moved;
      this.rowOf.set(moved, row);
    }
    this.rowLabel.pop();
    this.rowOf.delete(label);
  }

  private make(dims: number): Index {
    // 8-bit vectors are compared by cosine (the library's integer kernels; the model's vectors
    // are normalised, so the order is the inner product's); the others by inner product.
    return new Index({
      dimensions: dims,
      metric: this.scalar === 'i8' ? MetricKind.Cos : MetricKind.IP,
      quantization: { f16: ScalarKind.F16, i8: ScalarKind.I8, f32: ScalarKind.F32 }[this.scalar],
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
    this.keepRow(label, vector);
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
    fresh.forEach((l, i) => {
      this.labels.add(l);
      this.keepRow(l, rows[i]);
    });
    this.changes += fresh.length;
  }

  remove(label: number): void {
    if (!this.labels.delete(label)) return;
    this.index?.remove(BigInt(label));
    this.dropRow(label);
    this.changes++;
  }

  /**
   * The `k` labels closest to `q`, best first (ties: the higher label first). With `accept`, only
   * labels it lets through: the scan (or the graph) is asked for OVERSAMPLE × k candidates, and
   * four times more each round while fewer than k passed, up to the whole index, so a filter never
   * makes it return fewer than k when k pass. Up to exactMax vectors the candidates are the exact
   * nearest, so are the hits; beyond, the graph's walk may miss some (a rare filter reaches the
   * whole index only when its matches are that far down; the adapter searches a small filtered set
   * exactly instead).
   */
  async search(q: Float32Array, k: number, accept?: Accept): Promise<VectorHit[]> {
    const index = this.index;
    if (!index || k <= 0 || q.length !== this.dimensions || this.labels.size === 0) return [];
    const total = this.labels.size;
    let want = accept ? Math.min(total, k * OVERSAMPLE) : Math.min(total, k);
    for (;;) {
      const hits: VectorHit[] = [];
      if (this.rows) {
        const m = this.scan(this.rows, q, want);
        for (let i = 0; i < m.keys.length; i++) hits.push({ label: this.rowLabel[Number(m.keys[i])], score: Math.fround(1 - m.distances[i]) });
      } else {
        const m = index.search(q, want, 1);
        for (let i = 0; i < m.keys.length; i++) hits.push({ label: Number(m.keys[i]), score: Math.fround(1 - m.distances[i]) });
      }
      const passed = accept ? await accept(hits.map((h) => h.label)) : null;
      const out = passed ? hits.filter((h) => passed.has(h.label)) : hits;
      if (out.length >= k || want >= total) {
        out.sort((a, b) => b.score - a.score || b.label - a.label);
        return out.slice(0, k);
      }
      want = Math.min(total, want * OVERSAMPLE);
    }
  }

  /** The `want` rows nearest to `q` by an exact scan (keys: row numbers). */
  private scan(rows: Float32Array, q: Float32Array, want: number): Matches {
    const n = this.rowLabel.length;
    // The native scan reads from the start of each array's buffer (it ignores a view's offset):
    // the rows start theirs, and the query is copied into its own.
    return exactSearch(rows.subarray(0, n * this.dimensions), Float32Array.from(q), this.dimensions, Math.min(want, n), MetricKind.IP, 1);
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
    const meta: SavedIndexMeta = { key, dims: this.dimensions, mark, size: this.labels.size, bytes, head, scalar: this.scalar, connectivity: this.connectivity, format: 1 };
    const labels = Float64Array.from(this.labels);
    fs.writeFileSync(`${file}.labels.tmp`, Buffer.from(labels.buffer));
    fs.renameSync(`${file}.labels.tmp`, `${file}.labels`);
    const held = this.rows;
    if (held) {
      // The exact-scan copy, in the label file's order.
      const d = this.dimensions;
      const rows = new Float32Array(labels.length * d);
      labels.forEach((l, i) => {
        const r = this.rowOf.get(l) as number;
        rows.set(held.subarray(r * d, (r + 1) * d), i * d);
      });
      fs.writeFileSync(`${file}.rows.tmp`, Buffer.from(rows.buffer));
      fs.renameSync(`${file}.rows.tmp`, `${file}.rows`);
      meta.rows = fingerprint(`${file}.rows`);
    } else {
      fs.rmSync(`${file}.rows`, { force: true });
    }
    fs.writeFileSync(`${file}.json.tmp`, JSON.stringify(meta));
    fs.renameSync(`${file}.json.tmp`, `${file}.json`);
    this.changes = 0;
  }

  /** Loads what save() wrote for space `key`; the meta, or null (nothing held) when missing, of another space or unreadable. */
  load(file: string, key: string): SavedIndexMeta | null {
    this.clear();
    try {
      const meta = JSON.parse(fs.readFileSync(`${file}.json`, 'utf8')) as SavedIndexMeta;
      // A graph of another scalar type or degree than this index builds is rebuilt (the library would read it as it was saved).
      if (meta.format !== 1 || meta.key !== key || (meta.scalar ?? 'f32') !== this.scalar || (meta.connectivity ?? 16) !== this.connectivity) return null;
      if (!Number.isInteger(meta.dims) || meta.dims < 0) return null;
      const buf = fs.readFileSync(`${file}.labels`);
      const labels = new Float64Array(buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength));
      if (labels.length !== meta.size) return null;
      const print = fingerprint(file);
      if (print.bytes !== meta.bytes || print.head !== meta.head) return null;
      // An index small enough to be scanned exactly needs its copy of the vectors: without it
      // (a file of an older version, or saved after it had outgrown the copy) it is rebuilt.
      const exact = this.exactMax > 0 && meta.size <= this.exactMax;
      let rows: Float32Array | null = null;
      if (exact) {
        const print = meta.rows && fingerprint(`${file}.rows`);
        if (!print || print.bytes !== meta.rows?.bytes || print.head !== meta.rows.head || print.bytes !== meta.size * meta.dims * 4) return null;
        const raw = fs.readFileSync(`${file}.rows`);
        rows = new Float32Array(meta.size * meta.dims);
        new Uint8Array(rows.buffer).set(raw);
      }
      if (meta.size > 0) {
        const index = this.make(meta.dims);
        index.load(file);
        if (index.size() !== meta.size || index.dimensions() !== meta.dims) return null;
        this.index = index;
        this.dimensions = meta.dims;
      }
      for (const l of labels) this.labels.add(l);
      this.resetRows(exact);
      if (rows) {
        this.rows = rows;
        labels.forEach((l, i) => {
          this.rowLabel.push(l);
          this.rowOf.set(l, i);
        });
      }
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
