/**
 * The inverted-file (IVF) coarse index of the vector cache (sqlite-vector-cache.ts): `lists`
 * centroids trained by spherical k-means on a sample of the vectors, and each slot's list (its
 * nearest centroid by dot product). Pure functions over the cache's buffers, run in a
 * worker_thread (sqlite-vector-train-worker.ts) so the main thread never blocks on training,
 * or inline (tests, `train: 'inline'`).
 */

/**
 * Lists for n vectors: 1.6 √n (≈ 520 at 105,000), within [16, 1024]. More, smaller lists rank the
 * candidates better at the same probed share (bench's 100k vectors, 20 % probed: recall@10 0.955
 * with 318 lists, 0.970 with 512) but training costs grow with lists² (~30 s at 512 on this VM).
 */
export const LISTS_PER_ROOT = 1.6;
export function listsFor(n: number): number {
  return Math.max(16, Math.min(1024, Math.round(LISTS_PER_ROOT * Math.sqrt(n))));
}

/** Vectors sampled per list for training, and k-means iterations. */
export const TRAIN_PER_LIST = 40;
export const TRAIN_ITERATIONS = 6;

export interface TrainInput {
  data: Float32Array<ArrayBufferLike>;
  seqs: Int32Array<ArrayBufferLike>;
  /** Slots [0, count) are trained on and assigned. */
  count: number;
  dims: number;
  lists: number;
  seed?: number;
}

export interface TrainOutput {
  lists: number;
  /** lists × dims, unit length (SharedArrayBuffer). */
  centroids: Float32Array<ArrayBufferLike>;
  /** One list id per slot of the input's buffers (SharedArrayBuffer, the length of `seqs`); −1 for slots not assigned. */
  assign: Int32Array<ArrayBufferLike>;
  /** Slots [0, assigned) have their list in `assign`. */
  assigned: number;
}

/** A seeded PRNG (mulberry32): the training sample, and the tests' data. */
export function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Trains the centroids and assigns every live slot of [0, count). */
export function trainIvf(input: TrainInput): TrainOutput {
  const { data, seqs, count, dims } = input;
  const random = rng(input.seed ?? 42);
  const live: number[] = [];
  for (let i = 0; i < count; i++) if (seqs[i] >= 0) live.push(i);
  const lists = Math.max(1, Math.min(input.lists, live.length));
  // A sample (partial Fisher-Yates), copied so the training reads contiguous memory.
  const size = Math.min(live.length, lists * TRAIN_PER_LIST);
  for (let i = 0; i < size; i++) {
    const j = i + Math.floor(random() * (live.length - i));
    [live[i], live[j]] = [live[j], live[i]];
  }
  const sample = new Float32Array(size * dims);
  for (let n = 0; n < size; n++) sample.set(data.subarray(live[n] * dims, (live[n] + 1) * dims), n * dims);
  const centroids = new Float32Array(new SharedArrayBuffer(lists * dims * 4));
  // Initial centroids: the first `lists` of the (shuffled) sample.
  centroids.set(sample.subarray(0, lists * dims));
  const owner = new Int32Array(size);
  const sums = new Float64Array(lists * dims);
  const members = new Int32Array(lists);
  for (let it = 0; it < TRAIN_ITERATIONS; it++) {
    for (let n = 0; n < size; n++) owner[n] = nearestList(centroids, lists, dims, sample, n * dims);
    sums.fill(0);
    members.fill(0);
    for (let n = 0; n < size; n++) {
      const c = owner[n];
      members[c]++;
      for (let j = 0, o = c * dims, p = n * dims; j < dims; j++) sums[o + j] += sample[p + j];
    }
    for (let c = 0; c < lists; c++) {
      const o = c * dims;
      if (members[c] === 0) {
        // An empty list restarts at a random sample vector.
        const n = Math.floor(random() * size);
        centroids.set(sample.subarray(n * dims, (n + 1) * dims), o);
        continue;
      }
      let norm = 0;
      for (let j = 0; j < dims; j++) norm += sums[o + j] * sums[o + j];
      norm = Math.sqrt(norm) || 1;
      for (let j = 0; j < dims; j++) centroids[o + j] = sums[o + j] / norm;
    }
  }
  const assign = new Int32Array(new SharedArrayBuffer(seqs.length * 4)).fill(-1);
  for (let i = 0; i < count; i++) if (seqs[i] >= 0) assign[i] = nearestList(centroids, lists, dims, data, i * dims);
  return { lists, centroids, assign, assigned: count };
}

/** nearestList's scores (one per list), reused: a thread assigns one vector at a time. */
let listScores = new Float32Array(0);

/**
 * The list whose centroid has the largest dot product with v[off .. off + dims) (the first of
 * equal ones). The centroids are scored four per pass over v (dotsAt): training and assigning
 * spend nearly all their time here.
 */
export function nearestList(centroids: Float32Array<ArrayBufferLike>, lists: number, dims: number, v: Float32Array<ArrayBufferLike>, off: number): number {
  if (listScores.length < lists) listScores = new Float32Array(lists);
  const scores = listScores;
  dotsAt(v.subarray(off, off + dims), centroids, null, lists, scores);
  let best = 0;
  let bestScore = -Infinity;
  for (let c = 0; c < lists; c++) {
    if (scores[c] > bestScore) {
      bestScore = scores[c];
      best = c;
    }
  }
  return best;
}

/** The dot product of q with data[off .. off + q.length), summed in order (as `dotsAt` sums each). */
export function dotAt(q: Float32Array<ArrayBufferLike>, data: Float32Array<ArrayBufferLike>, off: number): number {
  let s = 0;
  for (let j = 0; j < q.length; j++) s += q[j] * data[off + j];
  return s;
}

/**
 * out[n] = dotAt(q, data, at(n) · q.length) for n < count, where at(n) is slots[n] (or n without
 * slots). Eight vectors per pass over q: their reads overlap, which matters when the vectors are
 * scattered (an exact re-rank reads 1,000 of them, each a cache miss: 0.73 ms one at a time,
 * 0.38 four at a time, 0.29 eight at a time at 384 dimensions on this machine; more than eight
 * run out of registers), and the same sums as dotAt's, term for term.
 */
export function dotsAt(q: Float32Array<ArrayBufferLike>, data: Float32Array<ArrayBufferLike>, slots: Int32Array | null, count: number, out: Float32Array): void {
  const d = q.length;
  let n = 0;
  for (; n + 7 < count; n += 8) {
    const o0 = (slots ? slots[n] : n) * d;
    const o1 = (slots ? slots[n + 1] : n + 1) * d;
    const o2 = (slots ? slots[n + 2] : n + 2) * d;
    const o3 = (slots ? slots[n + 3] : n + 3) * d;
    const o4 = (slots ? slots[n + 4] : n + 4) * d;
    const o5 = (slots ? slots[n + 5] : n + 5) * d;
    const o6 = (slots ? slots[n + 6] : n + 6) * d;
    const o7 = (slots ? slots[n + 7] : n + 7) * d;
    let s0 = 0;
    let s1 = 0;
    let s2 = 0;
    let s3 = 0;
    let s4 = 0;
    let s5 = 0;
    let s6 = 0;
    let s7 = 0;
    for (let j = 0; j < d; j++) {
      const x = q[j];
      s0 += x * data[o0 + j];
      s1 += x * data[o1 + j];
      s2 += x * data[o2 + j];
      s3 += x * data[o3 + j];
      s4 += x * data[o4 + j];
      s5 += x * data[o5 + j];
      s6 += x * data[o6 + j];
      s7 += x * data[o7 + j];
    }
    out[n] = s0;
    out[n + 1] = s1;
    out[n + 2] = s2;
    out[n + 3] = s3;
    out[n + 4] = s4;
    out[n + 5] = s5;
    out[n + 6] = s6;
    out[n + 7] = s7;
  }
  for (; n < count; n++) out[n] = dotAt(q, data, (slots ? slots[n] : n) * d);
}

/**
 * The live slots of [0, end) that have a list, grouped by list (a counting sort, ascending slots
 * within a list): list c's are members[starts[c], starts[c + 1]). Shared buffers, for the search workers.
 */
export function groupByList(
  assign: Int32Array<ArrayBufferLike>,
  lists: number,
  end: number,
  seqs: Int32Array<ArrayBufferLike>,
): { members: Int32Array<ArrayBufferLike>; starts: Int32Array<ArrayBufferLike> } {
  const starts = new Int32Array(new SharedArrayBuffer((lists + 1) * 4));
  for (let i = 0; i < end; i++) if (assign[i] >= 0 && seqs[i] >= 0) starts[assign[i] + 1]++;
  for (let c = 0; c < lists; c++) starts[c + 1] += starts[c];
  const members = new Int32Array(new SharedArrayBuffer(starts[lists] * 4));
  const next = starts.slice(0, lists);
  for (let i = 0; i < end; i++) if (assign[i] >= 0 && seqs[i] >= 0) members[next[assign[i]]++] = i;
  return { members, starts };
}
