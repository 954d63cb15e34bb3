import type { Worker } from 'node:worker_threads';
import type { Stmt } from './sqlite-memory-rows';
import { groupByList, listsFor, nearestList, TrainOutput, trainIvf } from './sqlite-vector-ivf';
import { startWorker } from '../../common/worker-script';
import { dotsF32, VectorDots, vectorStore } from './sqlite-vector-dots';
import { BUCKETS, Centroids, CodeTable, estimate, queryTable } from './sqlite-vector-estimate';

/**
 * The vectors of the current space, in memory, ONE copy per process: the main thread's cache
 * reads them from memory_vectors into SharedArrayBuffers and hands a `SharedVectors` view to the
 * search workers with each vector search (SharedArrayBuffers cross postMessage by reference).
 *
 * Layout (slot i): `data` float32 [i*dims, (i+1)*dims), `codes` the sign bits of (vector −
 * centre), one bit per dimension packed in bytes, `alpha` mean |vector − centre| (the scale of
 * the binary approximation), `seqs` the memory's seq or −1 for a free slot, `prevs` the seq of the
 * memory just before it in its session or −1 (memory_vectors.prev: linkNeighbours). `data` is the buffer
 * of a shared WebAssembly memory where one can hold it (up to 4 GiB), so that the exact re-rank
 * reads the vectors in WebAssembly where they lie (sqlite-vector-dots.ts). Slots are only
 * appended (a re-embedded memory gets a new slot, its old one is freed), so a worker reading
 * slots [0, count) never sees a half-written vector; a larger store or a reload makes new
 * buffers (`gen` moves) and workers still holding the old ones finish their search on them.
 *
 * Search (top): exact dot products when the candidates are few (≤ exactBelow: a small store, or
 * a filtered subset), else a quantised pass — an asymmetric estimate of every candidate's dot
 * product from its sign bits (the query against the bits, by lookup tables of small integers:
 * sqlite-vector-estimate.ts) — then an exact re-rank of the best `rerank(n)` by that estimate.
 *
 * Above exactBelow vectors an unfiltered search first narrows the candidates with an inverted
 * file (IVF, sqlite-vector-ivf.ts): `lists` ≈ 1.6 √n centroids trained by k-means in a worker thread
 * (never on the main thread, which serves HTTP), each slot's list in the shared `assign`. The
 * query is compared with every centroid and the best lists are probed until they hold at least
 * `probe(n)` slots (IVF_SHARE of n, at least IVF_MIN); those (and any slot not yet assigned) go
 * through the quantised pass and the re-rank above. Until the first training is done the full
 * quantised pass runs; new slots are assigned to their nearest centroid at refresh; the lists
 * are retrained when the store has doubled since (the old ones serve meanwhile). Each list's
 * slots are also kept together (`members`, by list), so a search gathers the probed lists'
 * slots without walking every slot's `assign`; slots assigned since the last grouping are
 * walked, and regrouped once REGROUP_AFTER of them have piled up. A filtered
 * search (`only`) never uses the lists.
 * bench/vector-recall.js and sqlite-vector-cache.spec.ts measure recall@10 against the exact scan.
 */
export interface SharedVectors {
  key: string;
  gen: number;
  dims: number;
  count: number;
  data: SharedArrayBuffer;
  /** The shared WebAssembly memory `data` is the buffer of, when it is one (sqlite-vector-dots.ts). */
  memory: WebAssembly.Memory | null;
  codes: SharedArrayBuffer;
  alpha: SharedArrayBuffer;
  seqs: SharedArrayBuffer;
  prevs: SharedArrayBuffer;
  /** The IVF lists, once trained. */
  ivf: SharedIvf | null;
}

export interface SharedIvf {
  lists: number;
  centroids: SharedArrayBuffer;
  assign: SharedArrayBuffer;
  sizes: SharedArrayBuffer;
  /** Slots [0, assigned) have their list in `assign`; later ones are always candidates. */
  assigned: number;
  members: SharedArrayBuffer;
  starts: SharedArrayBuffer;
  memberCodes: SharedArrayBuffer;
  memberAlpha: SharedArrayBuffer;
  grouped: number;
  freed: number;
}

interface Ivf {
  lists: number;
  centroids: Float32Array<ArrayBufferLike>;
  assign: Int32Array<ArrayBufferLike>;
  /** Slots assigned to each list (freed ones included until the next compaction). */
  sizes: Int32Array<ArrayBufferLike>;
  assigned: number;
  /** The live slots of [0, grouped) that have a list, by list: list c's are members[starts[c], starts[c + 1]). */
  members: Int32Array<ArrayBufferLike>;
  starts: Int32Array<ArrayBufferLike>;
  /** The members' sign bits and alpha, in the members' order (the quantised pass reads a probed list's in one run). */
  memberCodes: Uint8Array<ArrayBufferLike>;
  memberAlpha: Float32Array<ArrayBufferLike>;
  grouped: number;
  /** Members freed since the grouping (still in their list's run of `members`). */
  freed: number;
  /** Slots it was trained on (retrained when the store has doubled). */
  of: number;
}

/** The lists' grouped members and their copy of the codes (Ivf). */
type Grouping = Pick<Ivf, 'members' | 'starts' | 'memberCodes' | 'memberAlpha' | 'grouped' | 'freed'>;

/** A reader's views of the main thread's grouping. */
function groupingOf(s: SharedIvf): Grouping {
  return {
    members: new Int32Array(s.members),
    starts: new Int32Array(s.starts),
    memberCodes: new Uint8Array(s.memberCodes),
    memberAlpha: new Float32Array(s.memberAlpha),
    grouped: s.grouped,
    freed: s.freed,
  };
}

export interface VectorSearchOptions {
  /** Exact scan when the candidates are at most this many (default EXACT_BELOW). */
  exactBelow?: number;
  /** Candidates re-ranked exactly after the quantised pass, for n candidates and k wanted. */
  rerank?: (n: number, k: number) => number;
  /** IVF: slots probed (at least) for n slots; default defaultProbe. */
  probe?: (n: number) => number;
  /** IVF training: in a worker thread (default), inline (tests, small stores), or never. */
  train?: 'worker' | 'inline' | 'off';
  /** Lists for n vectors (default listsFor: 1.6 √n). */
  lists?: (n: number) => number;
  /** The quantised pass over the lists' codes in WebAssembly where it can (default), or always in JavaScript (tests). */
  wasm?: boolean;
}

/** Exact below this many candidates: ~4 ms of dot products at 384 dimensions on this machine. */
export const EXACT_BELOW = 10_000;
/** Re-ranked after the quantised pass: 3 % of the candidates, at least 1,000 (recall@10 ≥ 0.95 of exact; bench/README.md). */
export const RERANK_SHARE = 0.03;
export const RERANK_MIN = 1_000;
export const defaultRerank = (n: number, k: number): number => Math.max(RERANK_MIN, k * 20, Math.ceil(n * RERANK_SHARE));
/** IVF: the best lists are probed until they hold IVF_SHARE of the slots, at least IVF_MIN (recall@10 ≥ 0.95; bench/README.md). */
export const IVF_SHARE = 0.2;
export const IVF_MIN = 5_000;
export const defaultProbe = (n: number): number => Math.max(IVF_MIN, Math.ceil(n * IVF_SHARE));
/** New slots assigned to their list per refresh at most (the others stay candidates of every search until then). */
const ASSIGN_PER_REFRESH = 512;
/** The lists' members are regrouped once this many slots were assigned since (a search walks those one by one; regrouping 100,000 slots takes ≈ 1 ms). */
export const REGROUP_AFTER = 4096;

/** Every buffer of the main thread's cache is a SharedArrayBuffer (the empty ones too). */
function shared(a: { buffer: ArrayBufferLike }): SharedArrayBuffer {
  // By tag, not instanceof: a buffer made by the training worker may come from another realm (jest's vm).
  return Object.prototype.toString.call(a.buffer) === '[object SharedArrayBuffer]' ? (a.buffer as SharedArrayBuffer) : new SharedArrayBuffer(0);
}

export class VectorCache {
  private key: string | null = null;
  private version = -1;
  private stamp = 0;
  private dims = 0;
  private bytes = 0;
  private gen = 0;
  private count = 0;
  private capacity = 0;
  private data: Float32Array<ArrayBufferLike> = new Float32Array(0);
  /** The WebAssembly memory holding `data`, or null (a plain SharedArrayBuffer: too large, or no WebAssembly). */
  private memory: WebAssembly.Memory | null = null;
  private codes: Uint8Array<ArrayBufferLike> = new Uint8Array(0);
  private alpha: Float32Array<ArrayBufferLike> = new Float32Array(0);
  private seqs: Int32Array<ArrayBufferLike> = new Int32Array(0);
  private prevs: Int32Array<ArrayBufferLike> = new Int32Array(0);
  /** seq → slot (may hold stale slots of an older gen: check seqs[slot] === seq). */
  private slot = new Map<number, number>();
  /** Slots [0, indexed) are in `slot`. */
  private indexed = 0;
  /** Memories whose vector is of another space or size (counted in `rows`). */
  private other = new Set<number>();
  /** Rows of memory_vectors seen (any space), to notice deletions. */
  private rows = 0;
  /** The centre the sign bits are taken around, and how many vectors it was computed from. */
  private centre: Float32Array<ArrayBufferLike> = new Float32Array(0);
  private centreOf = 0;
  /** A reader (search worker): its vectors come from the main thread (attach), never from the table. */
  private reader = false;
  private readonly exactBelow: number;
  private readonly rerank: (n: number, k: number) => number;
  private readonly probe: (n: number) => number;
  private readonly lists: (n: number) => number;
  private readonly train: 'worker' | 'inline' | 'off';
  /** This thread's copy of the lists' codes for the WebAssembly pass (sqlite-vector-estimate.ts): undefined until a search needs it, null without. */
  private table: CodeTable | null | undefined;
  /** This thread's re-rank over `memory` (sqlite-vector-dots.ts): undefined until a search needs it, null without. */
  private scorer: VectorDots | null | undefined;
  /** WebAssembly where it can (VectorSearchOptions.wasm). */
  private readonly wasm: boolean;
  private ivf: Ivf | null = null;
  /** top()'s largest temporaries (the probed lists' runs, the slots outside them; the JavaScript path's members and estimates), kept between searches: grown, never shrunk. */
  private scratch = { runs: new Int32Array(0), tail: new Int32Array(0), members: new Int32Array(0), est: new Float32Array(0) };
  /** Moves whenever slots move (reserve, reset): a training started before is discarded. */
  private layout = 0;
  /** A training under way (worker), and the slot count it started from. */
  private training: { worker: Worker | null; layout: number; count: number } | null = null;
  /** Slot count at the last training attempt that failed (retried once the store has doubled). */
  private failedAt = 0;
  /** Slots the last top() compared exactly or by their sign bits (tests, diagnostics). */
  private scanned = 0;
  /** Resolved when no training is under way (whenIndexed). */
  private idle: Array<() => void> = [];

  constructor(opts: VectorSearchOptions = {}) {
    this.exactBelow = opts.exactBelow ?? EXACT_BELOW;
    this.rerank = opts.rerank ?? defaultRerank;
    this.probe = opts.probe ?? defaultProbe;
    this.lists = opts.lists ?? listsFor;
    this.train = opts.train ?? 'worker';
    this.wasm = opts.wasm !== false;
    if (!this.wasm) this.table = null;
  }

  /** The IVF lists in use (diagnostics, tests): null before the first training. */
  get index(): { lists: number; assigned: number; of: number } | null {
    return this.ivf ? { lists: this.ivf.lists, assigned: this.ivf.assigned, of: this.ivf.of } : null;
  }

  /** Candidates of the last top() (before the quantised pass): all the live slots without the IVF lists. */
  get lastCandidates(): number {
    return this.scanned;
  }

  /** Resolves once no IVF training is under way (tests, bench/vector-recall.js). */
  whenIndexed(): Promise<void> {
    if (!this.training) return Promise.resolve();
    return new Promise((resolve) => this.idle.push(resolve));
  }

  /** Stops a training under way (the index is closing). */
  close(): void {
    const t = this.training;
    this.training = null;
    if (t?.worker) void t.worker.terminate();
    this.settle();
  }

  get size(): number {
    let n = 0;
    for (let i = 0; i < this.count; i++) if (this.seqs[i] >= 0) n++;
    return n;
  }

  /** Bytes of vectors held (diagnostics). */
  get byteLength(): number {
    const i = this.ivf;
    const ivf = i
      ? i.centroids.byteLength + i.assign.byteLength + i.sizes.byteLength + i.members.byteLength + i.starts.byteLength + i.memberCodes.byteLength + i.memberAlpha.byteLength
      : 0;
    return this.data.byteLength + this.codes.byteLength + this.alpha.byteLength + this.seqs.byteLength + this.prevs.byteLength + ivf;
  }

  /** The view a search worker searches (sqlite-search-pool.ts); null before the first refresh. */
  share(): SharedVectors | null {
    if (this.key === null) return null;
    return {
      key: this.key,
      gen: this.gen,
      dims: this.dims,
      count: this.count,
      data: shared(this.data),
      memory: this.memory,
      codes: shared(this.codes),
      alpha: shared(this.alpha),
      seqs: shared(this.seqs),
      prevs: shared(this.prevs),
      ivf: this.ivf
        ? {
            lists: this.ivf.lists,
            centroids: shared(this.ivf.centroids),
            assign: shared(this.ivf.assign),
            sizes: shared(this.ivf.sizes),
            assigned: this.ivf.assigned,
            members: shared(this.ivf.members),
            starts: shared(this.ivf.starts),
            memberCodes: shared(this.ivf.memberCodes),
            memberAlpha: shared(this.ivf.memberAlpha),
            grouped: this.ivf.grouped,
            freed: this.ivf.freed,
          }
        : null,
    };
  }

  /** Searches on the main thread's vectors from now on (a search worker, per search). */
  attach(v: SharedVectors): void {
    this.reader = true;
    if (v.key !== this.key || v.gen !== this.gen) {
      this.key = v.key;
      this.gen = v.gen;
      this.dims = v.dims;
      this.bytes = Math.ceil(v.dims / 8);
      this.data = new Float32Array(v.data);
      this.memory = v.memory;
      this.scorer = undefined;
      this.codes = new Uint8Array(v.codes);
      this.alpha = new Float32Array(v.alpha);
      this.seqs = new Int32Array(v.seqs);
      this.prevs = new Int32Array(v.prevs);
      this.capacity = this.seqs.length;
      this.slot.clear();
      this.indexed = 0;
      this.ivf = v.ivf
        ? {
            lists: v.ivf.lists,
            centroids: new Float32Array(v.ivf.centroids),
            assign: new Int32Array(v.ivf.assign),
            sizes: new Int32Array(v.ivf.sizes),
            assigned: 0,
            of: 0,
            ...groupingOf(v.ivf),
          }
        : null;
    }
    this.count = v.count;
    if (this.ivf && v.ivf) {
      this.ivf.assigned = v.ivf.assigned;
      this.ivf.freed = v.ivf.freed;
      // Regrouped (new buffers, same gen): grouped only grows then.
      if (v.ivf.grouped !== this.ivf.grouped) Object.assign(this.ivf, groupingOf(v.ivf));
    }
  }

  /** Brings the copy up to date with the table for vector space `key` (main thread; a reader's is the main thread's). */
  refresh(stmt: Stmt, key: string): void {
    if (this.reader) return;
    const version = Number((stmt("SELECT value FROM embedding_meta WHERE key = 'vector_version'").pluck().get() as string | undefined) ?? 0);
    if (key === this.key && version === this.version) {
      this.maintainIvf();
      return;
    }
    if (key !== this.key) this.reset(key);
    const total = Number((stmt("SELECT value FROM embedding_meta WHERE key = 'vector_rows'").pluck().get() as string | undefined) ?? 0);
    const expected = stmt('SELECT count(*) FROM memory_vectors WHERE stamp > ?').pluck().get(this.stamp) as number;
    const first = this.count;
    // Row by row into the shared buffers (no second copy of the table in memory while loading).
    for (const r of stmt('SELECT seq, model, stamp, vec, prev FROM memory_vectors WHERE stamp > ? ORDER BY stamp').iterate(this.stamp) as Iterable<{
      seq: number;
      model: string;
      stamp: number;
      vec: Buffer;
      prev: number | null;
    }>) {
      this.stamp = Math.max(this.stamp, r.stamp);
      const known = this.live(r.seq) !== undefined;
      if (!known && !this.other.has(r.seq)) this.rows++;
      if (r.model !== key || r.vec.byteLength % 4 !== 0 || (this.dims !== 0 && r.vec.byteLength !== this.dims * 4)) {
        this.free(r.seq);
        this.other.add(r.seq);
        continue;
      }
      this.other.delete(r.seq);
      if (this.dims === 0) {
        this.dims = r.vec.byteLength / 4;
        this.bytes = Math.ceil(this.dims / 8);
      }
      this.free(r.seq);
      if (this.count >= this.capacity) this.reserve(this.count + Math.max(1, expected));
      // Byte copy: the driver's buffer need not be 4-byte aligned.
      new Uint8Array(this.data.buffer, this.count * this.dims * 4, this.dims * 4).set(r.vec);
      this.prevs[this.count] = r.prev ?? -1;
      this.seqs[this.count++] = r.seq;
    }
    // Sign bits around the mean vector, recomputed for all while the store doubles (up to 50k);
    // else only the new slots are encoded. (Workers see slots up to the count of their last
    // share(), which is taken after this refresh.)
    if (this.count > first) {
      if (this.centreOf === 0 || (this.count >= 2 * this.centreOf && this.centreOf < 50_000)) this.recentre();
      else for (let i = first; i < this.count; i++) this.alpha[i] = this.encode(this.data, i * this.dims, this.codes, i * this.bytes);
    }
    if (total !== this.rows) this.dropDeleted(stmt);
    this.version = version;
    this.maintainIvf();
  }

  /** Assigns new slots to their list; starts a training when there is none yet or the store has doubled since. */
  private maintainIvf(): void {
    const ivf = this.ivf;
    if (ivf) {
      const end = Math.min(this.count, ivf.assigned + ASSIGN_PER_REFRESH);
      for (let i = ivf.assigned; i < end; i++) {
        const c = this.seqs[i] >= 0 ? nearestList(ivf.centroids, ivf.lists, this.dims, this.data, i * this.dims) : -1;
        ivf.assign[i] = c;
        if (c >= 0) ivf.sizes[c]++;
      }
      ivf.assigned = end;
      if (ivf.assigned - ivf.grouped >= REGROUP_AFTER) this.regroup(ivf);
    }
    if (this.train === 'off' || this.training || this.count <= this.exactBelow) return;
    if (ivf && this.count < 2 * ivf.of) return;
    if (this.failedAt > 0 && this.count < 2 * this.failedAt) return;
    this.startTraining();
  }

  private startTraining(): void {
    const count = this.count;
    const lists = this.lists(count);
    const layout = this.layout;
    if (this.train === 'inline') {
      this.install(trainIvf({ data: this.data, seqs: this.seqs, count, dims: this.dims, lists }), layout, count);
      return;
    }
    const workerData = { data: shared(this.data), seqs: shared(this.seqs), count, dims: this.dims, lists };
    let worker: Worker;
    try {
      worker = startWorker(__filename, 'sqlite-vector-train-worker', workerData);
    } catch {
      this.failedAt = count;
      return;
    }
    worker.unref();
    const training = { worker, layout, count };
    this.training = training;
    const done = (failed: boolean) => {
      if (this.training !== training) return;
      this.training = null;
      if (failed) this.failedAt = count;
      this.settle();
    };
    worker.on('message', (msg: { result?: { lists: number; centroids: SharedArrayBuffer; assign: SharedArrayBuffer; assigned: number }; error?: string }) => {
      if (this.training !== training) return;
      if (msg.result) {
        const r = msg.result;
        this.install({ lists: r.lists, centroids: new Float32Array(r.centroids), assign: new Int32Array(r.assign), assigned: r.assigned }, layout, count);
      }
      done(!msg.result);
    });
    worker.on('error', () => done(true));
    worker.on('exit', () => done(true));
  }

  /** Uses a training's lists, unless the slots have moved since it started (then the next refresh trains again). */
  private install(out: TrainOutput, layout: number, count: number): void {
    if (layout !== this.layout || out.assign.length !== this.capacity) return;
    const sizes = new Int32Array(new SharedArrayBuffer(out.lists * 4));
    for (let i = 0; i < out.assigned; i++) {
      if (this.seqs[i] < 0) out.assign[i] = -1;
      else if (out.assign[i] >= 0) sizes[out.assign[i]]++;
    }
    this.ivf = { lists: out.lists, centroids: out.centroids, assign: out.assign, sizes, assigned: out.assigned, of: count, ...this.grouping(out.assign, out.lists, out.assigned) };
    // Workers re-read the buffers.
    this.gen++;
  }

  /** Regroups the assigned slots of ivf (after more were assigned, or the slots or their codes changed). */
  private regroup(ivf: Ivf): void {
    Object.assign(ivf, this.grouping(ivf.assign, ivf.lists, ivf.assigned));
  }

  /** The slots of [0, assigned), and a copy of their codes, by list (new shared buffers: a worker searching the old ones finishes on them). */
  private grouping(assign: Int32Array<ArrayBufferLike>, lists: number, assigned: number): Grouping {
    const { members, starts } = groupByList(assign, lists, assigned, this.seqs);
    const bytes = this.bytes;
    const memberCodes = new Uint8Array(new SharedArrayBuffer(members.length * bytes));
    const memberAlpha = new Float32Array(new SharedArrayBuffer(members.length * 4));
    for (let p = 0; p < members.length; p++) {
      const i = members[p];
      memberCodes.set(this.codes.subarray(i * bytes, (i + 1) * bytes), p * bytes);
      memberAlpha[p] = this.alpha[i];
    }
    return { members, starts, memberCodes, memberAlpha, grouped: assigned, freed: 0 };
  }

  private settle(): void {
    if (this.training) return;
    for (const resolve of this.idle.splice(0)) resolve();
  }

  private reset(key: string): void {
    this.key = key;
    this.version = -1;
    this.stamp = 0;
    this.dims = 0;
    this.bytes = 0;
    this.count = 0;
    this.capacity = 0;
    this.data = new Float32Array(0);
    this.memory = null;
    this.scorer = undefined;
    this.codes = new Uint8Array(0);
    this.alpha = new Float32Array(0);
    this.seqs = new Int32Array(0);
    this.prevs = new Int32Array(0);
    this.slot.clear();
    this.indexed = 0;
    this.other.clear();
    this.rows = 0;
    this.centre = new Float32Array(0);
    this.centreOf = 0;
    this.ivf = null;
    this.failedAt = 0;
    this.layout++;
    this.gen++;
  }

  /** Rows were deleted: free the slots of memories whose vector is gone. */
  private dropDeleted(stmt: Stmt): void {
    const present = new Set(stmt('SELECT seq FROM memory_vectors').pluck().all() as number[]);
    for (let i = 0; i < this.count; i++) if (this.seqs[i] >= 0 && !present.has(this.seqs[i])) this.free(this.seqs[i]);
    for (const s of this.other) if (!present.has(s)) this.other.delete(s);
    this.rows = present.size;
  }

  /** New (shared) buffers for at least `need` slots, keeping the live ones (compacted); gen moves. */
  private reserve(need: number): void {
    if (need <= this.capacity) return;
    const live: number[] = [];
    for (let i = 0; i < this.count; i++) if (this.seqs[i] >= 0) live.push(i);
    const capacity = Math.max(1024, Math.ceil((live.length + need - this.count) * 1.25));
    const store = vectorStore(capacity * this.dims * 4);
    const data = new Float32Array(store.buffer, 0, capacity * this.dims);
    const codes = new Uint8Array(new SharedArrayBuffer(capacity * this.bytes));
    const alpha = new Float32Array(new SharedArrayBuffer(capacity * 4));
    const seqs = new Int32Array(new SharedArrayBuffer(capacity * 4)).fill(-1);
    const prevs = new Int32Array(new SharedArrayBuffer(capacity * 4)).fill(-1);
    const ivf = this.ivf;
    const assign = ivf ? new Int32Array(new SharedArrayBuffer(capacity * 4)).fill(-1) : null;
    const sizes = ivf ? new Int32Array(new SharedArrayBuffer(ivf.lists * 4)) : null;
    let assigned = 0;
    live.forEach((from, to) => {
      data.set(this.data.subarray(from * this.dims, (from + 1) * this.dims), to * this.dims);
      codes.set(this.codes.subarray(from * this.bytes, (from + 1) * this.bytes), to * this.bytes);
      alpha[to] = this.alpha[from];
      seqs[to] = this.seqs[from];
      prevs[to] = this.prevs[from];
      // Slots keep their order: the assigned ones stay first.
      if (ivf && assign && sizes && from < ivf.assigned) {
        assign[to] = ivf.assign[from];
        if (assign[to] >= 0) sizes[assign[to]]++;
        assigned = to + 1;
      }
    });
    if (ivf && assign && sizes) this.ivf = { ...ivf, assign, sizes, assigned };
    this.layout++;
    this.data = data;
    this.memory = store.memory;
    this.scorer = undefined;
    this.codes = codes;
    this.alpha = alpha;
    this.seqs = seqs;
    this.prevs = prevs;
    this.capacity = capacity;
    this.count = live.length;
    if (this.ivf) this.regroup(this.ivf);
    this.slot.clear();
    this.indexed = 0;
    this.gen++;
  }

  /** Recomputes the centre from the vectors held, and every code (in new buffers). */
  private recentre(): void {
    const dims = this.dims;
    const sum = new Float64Array(dims);
    let n = 0;
    for (let i = 0; i < this.count; i++) {
      if (this.seqs[i] < 0) continue;
      for (let j = 0, o = i * dims; j < dims; j++) sum[j] += this.data[o + j];
      n++;
    }
    this.centre = Float32Array.from(sum, (s) => s / n);
    this.centreOf = n;
    const codes = new Uint8Array(new SharedArrayBuffer(this.capacity * this.bytes));
    const alpha = new Float32Array(new SharedArrayBuffer(this.capacity * 4));
    for (let i = 0; i < this.count; i++) alpha[i] = this.encode(this.data, i * dims, codes, i * this.bytes);
    this.codes = codes;
    this.alpha = alpha;
    if (this.ivf) this.regroup(this.ivf);
    this.gen++;
  }

  /** Writes the sign bits of (v − centre) at codes[out..]; returns mean |v − centre|. */
  private encode(v: Float32Array, off: number, codes: Uint8Array, out: number): number {
    let abs = 0;
    for (let b = 0; b < this.bytes; b++) {
      let byte = 0;
      for (let t = 0; t < 8; t++) {
        const j = b * 8 + t;
        if (j >= this.dims) break;
        const d = v[off + j] - this.centre[j];
        abs += Math.abs(d);
        if (d > 0) byte |= 1 << t;
      }
      codes[out + b] = byte;
    }
    return abs / this.dims;
  }

  private free(seq: number): void {
    const i = this.live(seq);
    if (i === undefined) return;
    this.seqs[i] = -1;
    if (this.ivf && i < this.ivf.grouped) this.ivf.freed++;
  }

  /** The slot of `seq`, if it has a live one. */
  private live(seq: number): number | undefined {
    for (; this.indexed < this.count; this.indexed++) {
      const s = this.seqs[this.indexed];
      if (s >= 0) this.slot.set(s, this.indexed);
    }
    const i = this.slot.get(seq);
    return i !== undefined && i < this.count && this.seqs[i] === seq ? i : undefined;
  }

  /**
   * Links the candidates that are session neighbours (libs/search-query/fusion.ts): each candidate
   * with a vector and the memory just before it in its session (its vector's prev), when that one is
   * a candidate too, each in the other's `neighbours`.
   */
  linkNeighbours(candidates: Map<number, { neighbours?: number[] }>): void {
    for (const [seq, c] of candidates) {
      const i = this.live(seq);
      const prev = i === undefined ? -1 : this.prevs[i];
      const before = prev >= 0 ? candidates.get(prev) : undefined;
      if (!before) continue;
      (c.neighbours ??= []).push(prev);
      (before.neighbours ??= []).push(seq);
    }
  }

  /** The cosine of q with each of `seqs` that has a vector (the float32 top() scores them with), in one pass. */
  cosines(seqs: Iterable<number>, q: Float32Array): Map<number, number> {
    const out = new Map<number, number>();
    if (q.length !== this.dims) return out;
    const found: number[] = [];
    const slots: number[] = [];
    for (const seq of seqs) {
      const i = this.live(seq);
      if (i === undefined) continue;
      found.push(seq);
      slots.push(i);
    }
    const scores = new Float32Array(slots.length);
    this.dots(q, Int32Array.from(slots), scores);
    for (let n = 0; n < found.length; n++) out.set(found[n], scores[n]);
    return out;
  }

  /** The `k` closest vectors, among `only` when given and never those in `except`. */
  top(q: Float32Array, k: number, only: Iterable<number> | null, except: Set<number> | null): Array<{ seq: number; score: number }> {
    if (q.length !== this.dims || k <= 0 || this.count === 0) return [];
    // The candidate slots.
    let slots: Int32Array;
    if (only) {
      const list: number[] = [];
      for (const seq of only) {
        const i = this.live(seq);
        if (i !== undefined && !except?.has(seq)) list.push(i);
      }
      slots = Int32Array.from(list);
    } else {
      const probed = this.count > this.exactBelow ? this.probed(q, k, except) : null;
      if (probed) return this.exact(q, probed, k);
      slots = this.allSlots();
      if (except && except.size > 0) slots = slots.filter((i) => !except.has(this.seqs[i]));
    }
    this.scanned = slots.length;
    if (slots.length > this.exactBelow) {
      const r = this.rerank(slots.length, k);
      if (r < slots.length) slots = this.prefilter(q, slots, r);
    }
    return this.exact(q, slots, k);
  }

  /** Every live slot. */
  private allSlots(): Int32Array {
    const out = new Int32Array(this.count);
    let n = 0;
    for (let i = 0; i < this.count; i++) if (this.seqs[i] >= 0) out[n++] = i;
    return out.subarray(0, n);
  }

  /**
   * The IVF path of top(), or null without lists: the lists closest to q holding at least
   * probe(count) slots, and the slots after the grouping that are in those lists or in none, go
   * through the quantised pass (the lists' copy of the codes, one run per probed list: the lists'
   * candidates go through it however few, an exact scan of 5,000 costing twice the quantised pass
   * over 20,000); the best ~rerank(n, k) by that estimate are returned, for the exact re-rank.
   *
   * A probed list's run also holds its members freed since the grouping and those in `except`:
   * they are estimated with the others (no pass over the members to skip them) and dropped from
   * the best r + freed, so at least r are left. When that would be many more than r (an
   * exclusion, many deletions), their estimates are masked instead, in one pass.
   *
   * With WebAssembly, the estimates are made and chosen from where they lie in the module's
   * memory (CodeTable.select: the runs as they are, no copy; the same choice as bestIndexes).
   */
  private probed(q: Float32Array, k: number, except: Set<number> | null): Int32Array | null {
    const ivf = this.ivf;
    if (!ivf || ivf.assigned === 0) return null;
    const budget = this.probe(this.count);
    if (budget >= ivf.assigned) return null;
    const { members, starts, grouped, assign, assigned, memberCodes, memberAlpha } = ivf;
    const table = this.codeTable(memberCodes, memberAlpha, { data: ivf.centroids, lists: ivf.lists, dims: this.dims });
    let scores = table?.centroidScores(q) ?? null;
    if (!scores) dotsF32(q, ivf.centroids, ivf.lists, (scores = new Float32Array(ivf.lists)));
    const mark = probedLists(scores, ivf.sizes, budget);
    const seqs = this.seqs;
    const skip = except && except.size > 0 ? except : null;
    // The probed lists' runs of members, [from, to) pairs in list order.
    const runs = this.spare('runs', 2 * ivf.lists);
    let count = 0;
    let inLists = 0;
    for (let c = 0; c < ivf.lists; c++) {
      if (mark[c] === 0) continue;
      runs[2 * count] = starts[c];
      runs[2 * count + 1] = starts[c + 1];
      inLists += starts[c + 1] - starts[c];
      count++;
    }
    // The slots after the grouping that are in those lists or in none (skipped here when freed or excluded).
    const tail = this.spare('tail', Math.max(0, this.count - grouped));
    let m = 0;
    for (let i = grouped; i < this.count; i++) {
      if (seqs[i] < 0 || (skip && skip.has(seqs[i]))) continue;
      if (i < assigned) {
        const c = assign[i];
        if (c < 0 || mark[c] === 0) continue;
      }
      tail[m++] = i;
    }
    const n = inLists + m;
    this.scanned = n;
    const r = this.rerank(n, k);
    // Members freed since the grouping are chosen among the others and dropped after: r + freed
    // leaves at least r. With an exclusion, or more freed than r, they are masked (NaN) first.
    const dead = (s: number) => s < 0 || (skip !== null && skip.has(s));
    const mask = skip !== null || ivf.freed > r;
    const want = r + (mask ? 0 : ivf.freed);
    let chosen: Int32Array;
    let otherBase: number;
    if (table) {
      // Estimated and chosen where they lie in the module's memory: est index p is member p,
      // otherBase + i tail slot i.
      table.room(count, m, n);
      const t = table.setQuery(q, this.dims);
      for (let c = 0; c < count; c++) table.estimate(runs[2 * c], runs[2 * c + 1]);
      if (m > 0) estimate(table.others(m), 0, m, tail, this.codes, this.alpha, this.bytes, t);
      if (mask) {
        const est = table.est;
        for (let c = 0; c < count; c++) for (let p = runs[2 * c]; p < runs[2 * c + 1]; p++) if (dead(seqs[members[p]])) est[p] = NaN;
      }
      chosen = table.select(runs, count, m, want);
      otherBase = table.otherBase;
    } else {
      // Candidate b: member index[b] for b < inLists, then tail slot b − inLists (chosen as otherBase + that).
      const index = this.spare('members', inLists);
      for (let c = 0, b = 0; c < count; c++) for (let p = runs[2 * c]; p < runs[2 * c + 1]; p++) index[b++] = p;
      const est = this.spare('est', n);
      const t = queryTable(q, this.dims, this.bytes);
      estimate(est, 0, inLists, index, memberCodes, memberAlpha, this.bytes, t);
      if (m > 0) estimate(est.subarray(inLists), 0, m, tail, this.codes, this.alpha, this.bytes, t);
      if (mask) for (let b = 0; b < inLists; b++) if (dead(seqs[members[index[b]]])) est[b] = NaN;
      otherBase = members.length;
      chosen = Int32Array.from(bestIndexes(est, want), (b) => (b < inLists ? index[b] : otherBase + b - inLists));
    }
    const out = new Int32Array(chosen.length);
    let o = 0;
    for (const x of chosen) {
      const slot = x < otherBase ? members[x] : tail[x - otherBase];
      if (!dead(seqs[slot])) out[o++] = slot;
    }
    return out.subarray(0, o);
  }

  /** Exact dot products over `slots` (dotsF32's float32, in WebAssembly where it can); the best `k`. */
  private exact(q: Float32Array, slots: Int32Array, k: number): Array<{ seq: number; score: number }> {
    const scores = new Float32Array(slots.length);
    this.dots(q, slots, scores);
    const order = bestIndexes(scores, k);
    const out: Array<{ seq: number; score: number }> = [];
    for (const n of order) {
      const seq = this.seqs[slots[n]];
      if (seq >= 0) out.push({ seq, score: scores[n] });
    }
    out.sort((a, b) => b.score - a.score || b.seq - a.seq);
    return out.slice(0, k);
  }

  /** out[n] = q · slot slots[n]'s vector, dotsF32's float32: in WebAssembly over the shared memory of vectors where it can. */
  private dots(q: Float32Array, slots: Int32Array, out: Float32Array): void {
    if (this.scorer === undefined) this.scorer = this.wasm && this.memory && this.dims % 4 === 0 ? VectorDots.over(this.memory) : null;
    if (this.scorer) this.scorer.dotsAt(q, slots, slots.length, out);
    else dotsF32(q, this.data, slots.length, out, slots);
  }

  /** The ~`r` slots with the best estimated dot product (sign bits against the query's table; the JavaScript loop). */
  private prefilter(q: Float32Array, slots: Int32Array, r: number): Int32Array {
    const est = this.spare('est', slots.length);
    estimate(est, 0, slots.length, slots, this.codes, this.alpha, this.bytes, queryTable(q, this.dims, this.bytes));
    const best = bestIndexes(est, r);
    const out = new Int32Array(best.length);
    for (let n = 0; n < best.length; n++) out[n] = slots[best[n]];
    return out;
  }

  /** A scratch array of at least n elements (its first n; their values are left over from the last search). */
  private spare<K extends keyof VectorCache['scratch']>(name: K, n: number): VectorCache['scratch'][K] {
    let a = this.scratch[name];
    if (a.length < n) {
      a = (name === 'est' ? new Float32Array(Math.ceil(n * 1.25)) : new Int32Array(Math.ceil(n * 1.25))) as VectorCache['scratch'][K];
      this.scratch[name] = a;
    }
    return a.subarray(0, n) as VectorCache['scratch'][K];
  }

  /** This thread's WebAssembly copy of the lists' codes, or null (then the JavaScript loop). */
  private codeTable(codes: Uint8Array<ArrayBufferLike>, alpha: Float32Array<ArrayBufferLike>, centroids: Centroids): CodeTable | null {
    if (this.table === undefined) this.table = CodeTable.create();
    return this.table?.hold(codes, alpha, this.bytes, centroids) ? this.table : null;
  }
}

/**
 * The lists to probe (mark[c] = 1): by descending score (equal scores: the lower c first) until
 * they hold `budget` slots. Without sorting all the lists: a histogram of the lists' sizes by
 * score finds the bucket where that walk stops; the lists above it are all taken, and only that
 * bucket's are sorted (a few of 500, where a sort of every list took 0.04 ms per search).
 */
export function probedLists(scores: Float32Array, sizes: Int32Array<ArrayBufferLike>, budget: number): Uint8Array {
  const n = scores.length;
  const mark = new Uint8Array(n);
  let lo = Infinity;
  let hi = -Infinity;
  for (let c = 0; c < n; c++) {
    if (scores[c] < lo) lo = scores[c];
    if (scores[c] > hi) hi = scores[c];
  }
  const B = 256;
  const per = hi > lo ? B / (hi - lo) : 0;
  // The same expression for every list: a higher score never falls in a lower bucket.
  const bucket = (s: number) => Math.min(B, ((s - lo) * per) | 0);
  const held = new Float64Array(B + 1);
  for (let c = 0; c < n; c++) held[bucket(scores[c])] += sizes[c];
  let total = 0;
  let cut = B;
  while (cut >= 0 && total + held[cut] < budget) total += held[cut--];
  const last: number[] = [];
  for (let c = 0; c < n; c++) {
    const b = bucket(scores[c]);
    if (b > cut) mark[c] = 1;
    else if (b === cut) last.push(c);
  }
  last.sort((a, b) => scores[b] - scores[a] || a - b);
  for (const c of last) {
    if (total >= budget) break;
    mark[c] = 1;
    total += sizes[c];
  }
  return mark;
}

/**
 * Indexes of (about, never fewer than min(k, n)) the k largest scores: a histogram threshold, O(n).
 * A NaN score (a masked candidate) is never among them. In float32 arithmetic, step by step as
 * CodeTable.select (sqlite-vector-estimate.wat `select`) chooses, so both choose alike.
 */
export function bestIndexes(scores: Float32Array, k: number): number[] {
  const n = scores.length;
  if (n <= k) return Array.from({ length: n }, (_, i) => i).filter((i) => !Number.isNaN(scores[i]));
  const f = Math.fround;
  let lo = Infinity;
  let hi = -Infinity;
  for (let i = 0; i < n; i++) {
    const s = scores[i];
    if (s < lo) lo = s;
    if (s > hi) hi = s;
  }
  // Bucket of score s: min(BUCKETS, ⌊(s − lo) · per⌋), the same expression in both passes.
  const per = hi > lo ? f(BUCKETS / f(hi - lo)) : 0;
  const counts = new Uint32Array(BUCKETS + 1);
  for (let i = 0; i < n; i++) {
    const s = scores[i];
    if (s !== s) continue;
    const b = f(f(s - lo) * per) | 0;
    counts[b > BUCKETS ? BUCKETS : b]++;
  }
  let cut = BUCKETS;
  let seen = counts[BUCKETS];
  while (cut > 0 && seen < k) seen += counts[--cut];
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const s = scores[i];
    if ((f(f(s - lo) * per) | 0) >= cut && s === s) out.push(i);
  }
  if (out.length > 4 * k) {
    // A bucket with many ties: keep the best k exactly.
    out.sort((a, b) => scores[b] - scores[a]);
    out.length = k;
  }
  return out;
}
