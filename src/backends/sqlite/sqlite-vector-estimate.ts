import { ESTIMATE_WASM } from './sqlite-vector-estimate.wasm';

type EstimateFn = (lut: number, codes: number, alpha: number, blocks: number, bytes: number, scale: number, base: number, qsum: number, out: number) => void;
type DotsFn = (q: number, data: number, count: number, dims: number, out: number) => void;
type SelectFn = (runs: number, nruns: number, est: number, k: number, counts: number, out: number) => number;

/** The IVF lists' centroids a CodeTable may hold: `lists` of `dims` float32. */
export interface Centroids {
  data: Float32Array<ArrayBufferLike>;
  lists: number;
  dims: number;
}

const PAGE = 65536;
/** Members per block: one 128-bit lane each per code byte. */
export const BLOCK = 16;
/** bestIndexes' (and the module's `select`) histogram buckets. */
export const BUCKETS = 2048;

/**
 * The quantised pass's lookup table for one query: for each 4 bits of a code (nibble j covers
 * dimensions 4j..4j+3; a code byte's low nibble first) and each value v, the query's sum over the
 * dimensions whose bit is set in v, quantised: round((sum − min_j) / scale), min_j being the
 * nibble's least sum (its negative components) and scale the largest nibble's range / qmax. So
 * Σ q over a code's set bits ≈ scale · Σ lookups + base (base = Σ min_j), and
 * dot(q, v − centre) ≈ alpha · (2 · Σ_{bit set} q_j − Σ q_j): the sign-bit estimate.
 *
 * Quantising moves an estimate by at most alpha · 2 · bytes · scale (half a step on each of the
 * 2 · bytes lookups): a few thousandths of a dot product at 384 dimensions, well inside the sign
 * bits' own error, and the candidates it keeps are re-ranked exactly. The integers let the
 * WebAssembly pass look up 16 codes per instruction; the JavaScript loop (no WebAssembly) sums
 * the same integers, so both give the same float32 for every code.
 */
export interface QueryTable {
  /** 16 entries per nibble, 2 · bytes nibbles. */
  nibbles: Uint8Array;
  scale: number;
  base: number;
  qsum: number;
  /** The JavaScript loop's table (256 sums per code byte), made by its first call for this query (byteSums). */
  perByte?: Uint16Array;
}

/** The table for query q (`dims` dimensions) and codes of `bytes` bytes, its nibbles written into `nibbles`. */
export function queryTable(q: Float32Array, dims: number, bytes: number, nibbles = new Uint8Array(bytes * 32)): QueryTable {
  const count = bytes * 2;
  const at = (d: number) => (d < dims ? q[d] : 0);
  let range = 0;
  for (let j = 0; j < count; j++) {
    let r = 0;
    for (let i = 0; i < 4; i++) r += Math.abs(at(4 * j + i));
    if (r > range) range = r;
  }
  let qsum = 0;
  for (let d = 0; d < dims; d++) qsum += q[d];
  // Two lookups per byte into a u8 lane, 2 · bytes of them into a u16 lane: neither may wrap.
  const qmax = Math.min(127, Math.floor(0xffff / (2 * bytes)));
  const scale = Math.fround(range / qmax) || 1;
  const sums = new Float64Array(16);
  let base = 0;
  for (let j = 0; j < count; j++) {
    let min = 0;
    // Entries [2^i, 2^(i+1)): the entry without bit i plus bit i's component.
    for (let i = 0, h = 1; i < 4; i++, h <<= 1) {
      const x = at(4 * j + i);
      if (x < 0) min += x;
      for (let u = 0; u < h; u++) sums[h + u] = sums[u] + x;
    }
    base += min;
    for (let v = 0; v < 16; v++) nibbles[j * 16 + v] = Math.min(qmax, Math.max(0, Math.round((sums[v] - min) / scale)));
  }
  return { nibbles, scale, base: Math.fround(base), qsum: Math.fround(qsum) };
}

/** For each code byte b and value x, the sum of its two nibbles' lookups: perByte[256 b + x] (once per query). */
function byteSums(t: QueryTable, bytes: number): Uint16Array {
  if (t.perByte) return t.perByte;
  const lut = new Uint16Array(bytes * 256);
  for (let b = 0; b < bytes; b++) {
    for (let x = 0; x < 256; x++) lut[b * 256 + x] = t.nibbles[b * 32 + (x & 15)] + t.nibbles[b * 32 + 16 + (x >> 4)];
  }
  t.perByte = lut;
  return lut;
}

/**
 * The JavaScript loop: est[n] for n in [from, to) from the codes at index[n] (`bytes` per code),
 * summing per code byte the two nibbles' lookups (one per byte from a table of 256 per byte, made
 * once per query however many calls it takes).
 */
export function estimate(
  est: Float32Array,
  from: number,
  to: number,
  index: Int32Array,
  codes: Uint8Array<ArrayBufferLike>,
  alpha: Float32Array<ArrayBufferLike>,
  bytes: number,
  t: QueryTable,
): void {
  const { scale, base, qsum } = t;
  // The WebAssembly pass's float32 arithmetic, step by step: alpha · (2 · (sum · scale + base) − qsum).
  const fromSum = (sum: number, a: number) => Math.fround(a * Math.fround(2 * Math.fround(Math.fround(sum * scale) + base) - qsum));
  const lut = byteSums(t, bytes);
  if (bytes % 4 === 0 && codes.byteOffset % 4 === 0) {
    // Four bytes per read (little-endian: byte b is bits 8b..8b+7 of its word).
    const words = new Uint32Array(codes.buffer, codes.byteOffset, codes.length >> 2);
    const per = bytes >> 2;
    for (let n = from; n < to; n++) {
      const i = index[n];
      let sum = 0;
      for (let w = 0, o = i * per, at = 0; w < per; w++, at += 1024) {
        const x = words[o + w];
        sum += lut[at | (x & 255)] + lut[(at + 256) | ((x >>> 8) & 255)] + lut[(at + 512) | ((x >>> 16) & 255)] + lut[(at + 768) | (x >>> 24)];
      }
      est[n] = fromSum(sum, alpha[i]);
    }
    return;
  }
  for (let n = from; n < to; n++) {
    const i = index[n];
    let sum = 0;
    for (let b = 0, o = i * bytes; b < bytes; b++) sum += lut[(b << 8) | codes[o + b]];
    est[n] = fromSum(sum, alpha[i]);
  }
}

/**
 * The quantised pass over the IVF lists' codes in WebAssembly SIMD (sqlite-vector-estimate.wat):
 * the same float32 as `estimate` for every code, 16 codes at a time (a byte shuffle looks up one
 * nibble of 16 codes). 20,000 codes of 48 bytes: 0.10 ms, against 0.85 ms for the JavaScript loop
 * and 0.3–0.4 ms for the float lookups one code byte at a time that it replaced (WebAssembly too).
 *
 * A WebAssembly function reads only its own memory, so each thread that searches keeps there a
 * copy of the grouping's codes (in blocks of 16 members: byte b of the 16 codes side by side) and
 * alphas (52 bytes per vector at 384 dimensions: 5.2 MB at 100,000), made when a search first
 * meets a grouping (after each training, and every REGROUP_AFTER new vectors).
 *
 * Memory, in bytes: [lookup table: 32 per code byte | codes | alphas | estimates], the last three
 * padded to whole blocks; then the IVF centroids' part (query, centroids, scores) and a search's
 * choice (room(): histogram, estimates of the slots outside the lists, runs, chosen indexes).
 */
export class CodeTable {
  private static compiled: WebAssembly.Module | null | undefined;
  private readonly memory: WebAssembly.Memory;
  private readonly run: EstimateFn;
  private readonly dots: DotsFn;
  private readonly choose: SelectFn;
  /** The grouping's codes copied in (by identity), their size, and where they are. */
  private source: Uint8Array<ArrayBufferLike> | null = null;
  private bytes = 0;
  private codesAt = 0;
  private alphaAt = 0;
  private estAt = 0;
  /** The IVF centroids copied in (by identity; none when their dimensions are not a multiple of 4), and where they and the query and scores are. */
  private centroids: Float32Array<ArrayBufferLike> | null = null;
  private lists = 0;
  private dims = 0;
  private queryAt = 0;
  private centroidsAt = 0;
  private scoresAt = 0;
  /** The lookup table's place in memory (bytes · 32), and the query's table in it (setQuery). */
  private nibbles = new Uint8Array(0);
  private query: QueryTable | null = null;
  /** est[p]: the estimate of member p, for the members of the ranges estimated since the last setQuery. */
  est = new Float32Array(0);
  /** After the held part (16-aligned): [histogram | other estimates | runs | chosen], sized by room(). */
  private heldEnd = 0;
  /** Members held (est's length). */
  private members = 0;
  private countsAt = 0;
  private otherAt = 0;
  private runsAt = 0;
  private chosenAt = 0;

  /** A table for this thread, or null where WebAssembly (or its SIMD) is missing (node --jitless): the JavaScript loop then. */
  static create(): CodeTable | null {
    if (CodeTable.compiled === undefined) {
      try {
        CodeTable.compiled = new WebAssembly.Module(Buffer.from(ESTIMATE_WASM, 'base64'));
      } catch {
        CodeTable.compiled = null;
      }
    }
    return CodeTable.compiled ? new CodeTable(CodeTable.compiled) : null;
  }

  private constructor(compiled: WebAssembly.Module) {
    const exports = new WebAssembly.Instance(compiled, {}).exports as { memory: WebAssembly.Memory; estimate: EstimateFn; dots: DotsFn; select: SelectFn };
    this.memory = exports.memory;
    this.run = exports.estimate;
    this.dots = exports.dots;
    this.choose = exports.select;
  }

  /**
   * Holds a grouping's codes (`bytes` per member) and alphas, and the IVF lists' centroids (`lists`
   * of `dims` float32) when given, copying them in unless they are the ones held already.
   */
  hold(codes: Uint8Array<ArrayBufferLike>, alpha: Float32Array<ArrayBufferLike>, bytes: number, centroids?: Centroids): boolean {
    if (bytes === 0) return false;
    const held = centroids && centroids.dims % 4 === 0 ? centroids : null;
    if (codes === this.source && bytes === this.bytes && (held?.data ?? null) === this.centroids) return true;
    const members = alpha.length;
    const blocks = Math.ceil(members / BLOCK);
    const lutBytes = bytes * 32;
    // [lookup table | codes | alphas | estimates | query | centroids | their scores]
    const estEnd = lutBytes + blocks * BLOCK * (bytes + 8);
    const need = estEnd + (held ? (held.dims + held.lists * held.dims + held.lists) * 4 : 0);
    this.grow(need);
    const buffer = this.memory.buffer;
    this.heldEnd = Math.ceil(need / 16) * 16;
    this.countsAt = this.otherAt = this.runsAt = this.chosenAt = this.heldEnd;
    this.bytes = bytes;
    this.codesAt = lutBytes;
    this.alphaAt = this.codesAt + blocks * BLOCK * bytes;
    this.estAt = this.alphaAt + blocks * BLOCK * 4;
    const out = new Uint8Array(buffer, this.codesAt, blocks * BLOCK * bytes);
    for (let p = 0; p < members; p++) {
      // Member p is lane p % 16 of its block: its byte b at block + 16 b.
      const src = p * bytes;
      for (let b = 0, o = (p - (p % BLOCK)) * bytes + (p % BLOCK); b < bytes; b++, o += BLOCK) out[o] = codes[src + b];
    }
    // (The last block's padding lanes keep whatever they held: their estimates are never read.)
    new Float32Array(buffer, this.alphaAt, blocks * BLOCK).fill(0).set(alpha.subarray(0, members));
    this.nibbles = new Uint8Array(buffer, 0, lutBytes);
    this.est = new Float32Array(buffer, this.estAt, members);
    this.members = members;
    this.source = codes;
    this.centroids = held?.data ?? null;
    if (held) {
      this.lists = held.lists;
      this.dims = held.dims;
      this.queryAt = estEnd;
      this.centroidsAt = this.queryAt + held.dims * 4;
      this.scoresAt = this.centroidsAt + held.lists * held.dims * 4;
      new Float32Array(buffer, this.centroidsAt, held.lists * held.dims).set(held.data.subarray(0, held.lists * held.dims));
    }
    return true;
  }

  /** The held centroids' scores for query q (sqlite-vector-dots.ts dotsF32's float32; a view valid until the next call), or null when none are held. */
  centroidScores(q: Float32Array<ArrayBufferLike>): Float32Array | null {
    if (this.centroids === null || q.length !== this.dims) return null;
    new Float32Array(this.memory.buffer, this.queryAt, this.dims).set(q);
    this.dots(this.queryAt, this.centroidsAt, this.lists, this.dims, this.scoresAt);
    return new Float32Array(this.memory.buffer, this.scoresAt, this.lists);
  }

  /** Fills the lookup table for query q (`dims` dimensions), for the codes held; returns it (the JavaScript loop takes the same). */
  setQuery(q: Float32Array, dims: number): QueryTable {
    this.query = queryTable(q, dims, this.bytes, this.nibbles);
    return this.query;
  }

  /**
   * Makes room for a choice (select) among the members of `runs` runs and `others` other
   * estimates (`candidates` in all). Before setQuery: growing the memory replaces its views.
   */
  room(runs: number, others: number, candidates: number): void {
    this.countsAt = this.heldEnd;
    this.otherAt = this.countsAt + (BUCKETS + 4) * 4;
    this.runsAt = this.otherAt + Math.ceil(others / 4) * 16;
    this.chosenAt = this.runsAt + (runs + 1) * 8;
    const end = this.chosenAt + candidates * 4;
    this.grow(end);
  }

  /** Where the estimates of candidates outside the runs go (est index otherBase + i), after room(); a view valid until the next room(). */
  others(n: number): Float32Array {
    return new Float32Array(this.memory.buffer, this.otherAt, n);
  }

  /** The est index of the first of others() (select's indexes from it on are others'). */
  get otherBase(): number {
    return (this.otherAt - this.estAt) / 4;
  }

  /**
   * bestIndexes (sqlite-vector-cache.ts) of the members' estimates in `runs` ([from, to) pairs of
   * member positions, `count` pairs) followed by the `others` estimates of others(), in the same
   * order and float32, so the same choice: est indexes (members' positions; otherBase + i for
   * other i), run by run in order.
   */
  select(runs: Int32Array, count: number, others: number, k: number): Int32Array {
    const pairs = new Int32Array(this.memory.buffer, this.runsAt, 2 * (count + 1));
    pairs.set(runs.subarray(0, 2 * count));
    let n = count;
    if (others > 0) {
      pairs[2 * n] = this.otherBase;
      pairs[2 * n + 1] = this.otherBase + others;
      n++;
    }
    let total = 0;
    for (let i = 0; i < n; i++) total += pairs[2 * i + 1] - pairs[2 * i];
    const est = () => new Float32Array(this.memory.buffer, this.estAt, this.otherBase + others);
    if (total <= k) {
      const value = est();
      const all: number[] = [];
      for (let i = 0; i < n; i++) for (let p = pairs[2 * i]; p < pairs[2 * i + 1]; p++) if (value[p] === value[p]) all.push(p);
      return Int32Array.from(all);
    }
    const m = this.choose(this.runsAt, n, this.estAt, k, this.countsAt, this.chosenAt);
    const chosen = new Int32Array(this.memory.buffer, this.chosenAt, m);
    // A bucket with many ties: keep the best k exactly (as bestIndexes).
    if (m <= 4 * k) return chosen.slice();
    const value = est();
    return Int32Array.from(Array.from(chosen).sort((a, b) => value[b] - value[a]).slice(0, k));
  }

  /** Grows the memory to at least `bytes`; growing detaches the old views (their length is 0 then), so they are made again, at the same places. */
  private grow(bytes: number): void {
    if (bytes <= this.memory.buffer.byteLength) return;
    this.memory.grow(Math.ceil((bytes - this.memory.buffer.byteLength) / PAGE));
    this.nibbles = new Uint8Array(this.memory.buffer, 0, this.bytes * 32);
    this.est = new Float32Array(this.memory.buffer, this.estAt, this.members);
  }

  /** est[p] for the members p in [from, to) (and the others of their blocks), for the query of the last setQuery. */
  estimate(from: number, to: number): void {
    const t = this.query;
    if (to <= from || !t) return;
    const first = Math.floor(from / BLOCK);
    const blocks = Math.ceil(to / BLOCK) - first;
    const at = first * BLOCK;
    this.run(0, this.codesAt + at * this.bytes, this.alphaAt + at * 4, blocks, this.bytes, t.scale, t.base, t.qsum, this.estAt + at * 4);
  }
}
