import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { bestIndexes } from './sqlite-vector-cache';
import { dotsF32 } from './sqlite-vector-dots';
import { CodeTable, estimate, queryTable } from './sqlite-vector-estimate';
import { dotAt, rng } from './sqlite-vector-ivf';

/** The JavaScript loop's estimates (`estimate`, the path without WebAssembly) of every member. */
function javascript(codes: Uint8Array, alpha: Float32Array, bytes: number, q: Float32Array): Float32Array {
  const est = new Float32Array(alpha.length);
  estimate(est, 0, alpha.length, Int32Array.from(alpha, (_, p) => p), codes, alpha, bytes, queryTable(q, q.length, bytes));
  return est;
}

/** The sign-bit estimate unquantised, in doubles: alpha · (2 · Σ_{bit set} q_j − Σ q_j). */
function unquantised(codes: Uint8Array, alpha: Float32Array, bytes: number, q: Float32Array, p: number): number {
  let set = 0;
  let sum = 0;
  for (let d = 0; d < q.length; d++) {
    sum += q[d];
    if (codes[p * bytes + (d >> 3)] & (1 << (d & 7))) set += q[d];
  }
  return alpha[p] * (2 * set - sum);
}

function random(members: number, bytes: number, seed: number): { codes: Uint8Array; alpha: Float32Array } {
  const r = rng(seed);
  const codes = new Uint8Array(members * bytes).map(() => Math.floor(r() * 256));
  const alpha = new Float32Array(members).map(() => r() * 0.1);
  return { codes, alpha };
}

/** A unit query of `dims` random components. */
function query(dims: number, seed: number): Float32Array {
  const r = rng(seed);
  const q = new Float32Array(dims).map(() => r() - 0.5);
  const norm = Math.hypot(...q);
  return q.map((x) => x / norm);
}

/**
 * How far the table's estimate may be from the JavaScript loop's: half a quantisation step on each
 * of the 2 · bytes lookups (the step being the largest nibble's range / qmax), times 2 · alpha,
 * plus float32 rounding.
 */
function bound(q: Float32Array, bytes: number, alpha: number): number {
  let range = 0;
  for (let j = 0; j < 2 * bytes; j++) {
    let r = 0;
    for (let i = 0; i < 4; i++) r += Math.abs(q[4 * j + i] ?? 0);
    range = Math.max(range, r);
  }
  const qmax = Math.min(127, Math.floor(0xffff / (2 * bytes)));
  return 2 * alpha * (2 * bytes) * (range / qmax / 2) + 1e-6;
}

describe('CodeTable (the quantised pass in WebAssembly SIMD)', () => {
  it('gives the JavaScript loop’s float32 for every code asked, within half a step per lookup of the unquantised estimate, as its memory grows and its codes change', () => {
    const table = CodeTable.create();
    expect(table).not.toBeNull();
    // 384 dimensions (48 bytes), then 1,536 (192 bytes: OpenAI's size) with more members than the
    // first memory holds, then 3,072 (384 bytes: a smaller table, so 768 lookups fit in 16 bits), then 44 (6 bytes, padded).
    for (const [members, dims, seed] of [
      [300, 384, 1],
      [20_000, 384, 2],
      [2_000, 1536, 3],
      [500, 3072, 4],
      [50, 44, 5],
    ]) {
      const bytes = Math.ceil(dims / 8);
      const { codes, alpha } = random(members, bytes, seed);
      const q = query(dims, seed + 10);
      expect(table!.hold(codes, alpha, bytes)).toBe(true);
      table!.setQuery(q, dims);
      const from = Math.floor(members / 3) + 1;
      const to = members - 7;
      table!.estimate(from, to);
      table!.estimate(0, 5);
      const js = javascript(codes, alpha, bytes, q);
      const asked = [0, 4, from, from + 1, Math.floor((from + to) / 2), to - 1];
      for (let p = from; p < to; p += 7) asked.push(p);
      let worst = 0;
      for (const p of asked) {
        expect(table!.est[p]).toBe(js[p]);
        const err = Math.abs(table!.est[p] - unquantised(codes, alpha, bytes, q, p));
        expect(err).toBeLessThanOrEqual(bound(q, bytes, alpha[p]));
        worst = Math.max(worst, err / (2 * alpha[p] * bytes));
      }
      // Not a vacuous bound: the estimates move with the codes (not all equal), and rounding left some error.
      expect(new Set(asked.map((p) => table!.est[p])).size).toBeGreaterThan(asked.length / 2);
      expect(worst).toBeGreaterThan(0);
    }
  });

  it('ranks codes as the unquantised estimate does, but for near ties', () => {
    const table = CodeTable.create()!;
    const members = 5_000;
    const { codes, alpha } = random(members, 48, 21);
    const q = query(384, 22);
    table.hold(codes, alpha, 48);
    table.setQuery(q, 384);
    table.estimate(0, members);
    const exact = Float32Array.from(alpha, (_, p) => unquantised(codes, alpha, 48, q, p));
    const top = (est: Float32Array) => new Set(Array.from(est.subarray(0, members), (e, p) => [e, p]).sort((a, b) => b[0] - a[0]).slice(0, 250).map(([, p]) => p));
    const a = top(table.est);
    const b = top(exact);
    let same = 0;
    for (const p of a) if (b.has(p)) same++;
    expect(same / 250).toBeGreaterThan(0.9);
  });

  it('is exact when every lookup is a whole step, and copies a grouping once, again only for another one', () => {
    const table = CodeTable.create()!;
    const a = random(1000, 48, 7);
    const b = random(1000, 48, 8);
    // One component of ±0.1 per nibble: each nibble's sums are its least or its largest, 0 or 127 steps.
    const q = Float32Array.from({ length: 384 }, (_, d) => (d % 4 !== 0 ? 0 : d % 8 === 0 ? 0.1 : -0.1));
    table.hold(a.codes, a.alpha, 48);
    table.setQuery(q, 384);
    table.estimate(0, 1);
    const first = table.est[0];
    expect(first).toBeCloseTo(unquantised(a.codes, a.alpha, 48, q, 0), 6);
    // The same codes object: kept (a change made in place after the copy is not seen).
    a.alpha[0] *= 2;
    table.hold(a.codes, a.alpha, 48);
    table.setQuery(q, 384);
    table.estimate(0, 1);
    expect(table.est[0]).toBe(first);
    table.hold(b.codes, b.alpha, 48);
    table.setQuery(q, 384);
    table.estimate(0, 1);
    expect(table.est[0]).toBeCloseTo(unquantised(b.codes, b.alpha, 48, q, 0), 6);
  });

  it('the JavaScript loop makes its per-byte table once per query: two calls give what one call gives', () => {
    const { codes, alpha } = random(100, 48, 31);
    const q = query(384, 32);
    const t = queryTable(q, 384, 48);
    const index = Int32Array.from(alpha, (_, p) => p);
    const split = new Float32Array(100);
    estimate(split, 0, 40, index, codes, alpha, 48, t);
    const made = t.perByte;
    expect(made).toBeInstanceOf(Uint16Array);
    estimate(split, 40, 100, index, codes, alpha, 48, t);
    expect(t.perByte).toBe(made);
    expect([...split]).toEqual([...javascript(codes, alpha, 48, q)]);
    // Another query has its own table (and other estimates).
    const other = javascript(codes, alpha, 48, query(384, 33));
    expect([...other]).not.toEqual([...split]);
  });

  it('scores the IVF centroids with the float32 of dotsF32 (the path without WebAssembly), close to the dot products, as the centroids change', () => {
    const table = CodeTable.create()!;
    const { codes, alpha } = random(100, 48, 41);
    // 520 lists (the bench's), a count that is not a multiple of four, OpenAI's size, a small model's.
    for (const [lists, dims, seed] of [
      [520, 384, 1],
      [7, 384, 2],
      [33, 1536, 3],
      [5, 44, 4],
    ]) {
      const r = rng(seed);
      const data = new Float32Array(lists * dims).map(() => r() - 0.5);
      const q = query(dims, seed + 50);
      expect(table.hold(codes, alpha, 48, { data, lists, dims })).toBe(true);
      const wasm = table.centroidScores(q);
      expect(wasm).not.toBeNull();
      const js = new Float32Array(lists);
      dotsF32(q, data, lists, js);
      expect([...wasm!]).toEqual([...js]);
      for (let c = 0; c < lists; c++) expect(Math.abs(js[c] - dotAt(q, data, c * dims))).toBeLessThan(1e-5);
      // Not all equal: the scores follow the centroids.
      expect(new Set(js).size).toBe(lists);
    }
    // The codes are kept when only the centroids change, and the estimates still come from them.
    table.setQuery(query(384, 60), 384);
    table.estimate(0, 100);
    expect([...table.est.subarray(0, 100)]).toEqual([...javascript(codes, alpha, 48, query(384, 60))]);
    // Dimensions the module cannot take four at a time: no centroids held (dotsF32 then).
    expect(table.hold(codes, alpha, 48, { data: new Float32Array(3 * 6), lists: 3, dims: 6 })).toBe(true);
    expect(table.centroidScores(query(6, 1))).toBeNull();
  });

  it('select: chooses among runs of the estimates and other estimates as bestIndexes does, the k best and more, never a NaN', () => {
    const table = CodeTable.create()!;
    const members = 5000;
    const { codes, alpha } = random(members, 48, 77);
    expect(table.hold(codes, alpha, 48)).toBe(true);
    const r = rng(5);
    // [k, other estimates, share of NaN, distinct values (0: any)]: spread scores, masked ones,
    // few candidates per wanted, many ties (bestIndexes keeps exactly k then), fewer than k.
    for (const [k, others, nan, distinct] of [
      [300, 0, 0, 0],
      [1000, 37, 0.1, 0],
      [50, 3, 0, 0],
      [100, 0, 0, 3],
      [10_000, 5, 0.2, 0],
    ]) {
      const runs: number[] = [];
      for (let p = 0; p < members; ) {
        const len = Math.floor(r() * 120);
        if (r() < 0.6) runs.push(p, Math.min(members, p + len));
        p += len + Math.floor(r() * 80);
      }
      const count = runs.length / 2;
      table.room(count, others, members + others);
      const value = () => (distinct ? Math.floor(r() * distinct) / distinct : r() < nan ? NaN : r() * 2 - 1);
      // The same estimates in bestIndexes' one array, and what each of its indexes is in select's.
      const flat: number[] = [];
      const ids: number[] = [];
      for (let c = 0; c < count; c++) {
        for (let p = runs[2 * c]; p < runs[2 * c + 1]; p++) {
          table.est[p] = value();
          flat.push(table.est[p]);
          ids.push(p);
        }
      }
      const other = table.others(others);
      for (let i = 0; i < others; i++) {
        other[i] = value();
        flat.push(other[i]);
        ids.push(table.otherBase + i);
      }
      const chosen = [...table.select(Int32Array.from(runs), count, others, k)];
      expect(chosen).toEqual(bestIndexes(Float32Array.from(flat), k).map((b) => ids[b]));
      // What it is: at least min(k, the scores) (exactly k among many ties), every score above the
      // k-th best among them, no NaN.
      const scores = flat.filter((x) => !Number.isNaN(x)).sort((a, b) => b - a);
      const kth = scores[Math.min(k, scores.length) - 1];
      const valueOf = new Map(ids.map((id, b) => [id, flat[b]]));
      if (distinct) expect(chosen).toHaveLength(k);
      else expect(chosen.length).toBeGreaterThanOrEqual(Math.min(k, scores.length));
      expect(chosen.some((id) => Number.isNaN(valueOf.get(id)))).toBe(false);
      const picked = new Set(chosen);
      expect(ids.filter((id) => (valueOf.get(id) as number) > kth).every((id) => picked.has(id))).toBe(true);
    }
  });

  it('room: a choice that needs more memory grows it, and the lookup table and estimates still work', () => {
    const table = CodeTable.create()!;
    const { codes, alpha } = random(100, 48, 8);
    expect(table.hold(codes, alpha, 48)).toBe(true);
    // 16 MB of chosen indexes: more than the memory holds (it grows, its old views detach).
    table.room(1, 10, 4_000_000);
    expect(table.est).toHaveLength(100);
    const q = query(384, 61);
    table.setQuery(q, 384);
    table.estimate(0, 100);
    const js = javascript(codes, alpha, 48, q);
    expect([...table.est]).toEqual([...js]);
    expect([...table.select(Int32Array.of(0, 100), 1, 0, 10)]).toEqual(bestIndexes(js, 10));
  });

  it('runs the modules assembled from sqlite-vector-estimate.wat and sqlite-vector-dots.wat (npm run build:wasm)', async () => {
    const { generate, TARGETS } = require(join(__dirname, '..', '..', '..', 'scripts', 'build-wasm.js')) as {
      generate: (wat: string) => Promise<string>;
      TARGETS: Array<{ wat: string; out: string }>;
    };
    expect(TARGETS.map((t) => t.wat.replace(/.*\//, ''))).toEqual(['sqlite-vector-estimate.wat', 'sqlite-vector-dots.wat']);
    for (const { wat, out } of TARGETS) expect(readFileSync(out, 'utf8')).toBe(await generate(wat));
  });
});
