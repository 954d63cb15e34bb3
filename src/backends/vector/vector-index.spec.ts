import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Accept, dot, VectorHit, VectorIndex } from './vector-index';
import { seededRandom } from '../../../test/support/rng';
import { noiseVector } from '../../../test/support/vectors';

const DIMS = 16;

/** A unit vector along axis `a`. */
function axis(a: number): Float32Array {
  const v = new Float32Array(DIMS);
  v[a] = 1;
  return v;
}

/** The MongoDB vector-copy contract's noise: nothing on axes 0..7 (orthogonal to every axis(0..7) query). */
const noise = (i: number): Float32Array => noiseVector(i, DIMS);

function shuffled<T>(xs: T[], seed: number): T[] {
  const r = seededRandom(seed);
  const out = [...xs];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(r() * (i + 1));
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}

/** Built as the adapters build it: chunks of 1,000 added in the order given. */
function build(vectors: Map<number, Float32Array>, order: number[], index = new VectorIndex()): VectorIndex {
  for (let i = 0; i < order.length; i += 1_000) {
    const labels = order.slice(i, i + 1_000);
    index.addMany(
      labels,
      labels.map((l) => vectors.get(l) as Float32Array),
      1,
    );
  }
  return index;
}

/** The truth: every vector `ok` lets through, scored one by one. */
function exact(vectors: Map<number, Float32Array>, q: Float32Array, k: number, ok: (label: number) => boolean): VectorHit[] {
  return [...vectors]
    .filter(([l]) => ok(l))
    .map(([label, v]) => ({ label, score: dot(q, v) }))
    .sort((a, b) => b.score - a.score || b.label - a.label)
    .slice(0, k);
}

const group =
  (g: number, groups: number): Accept =>
  (labels) =>
    new Set(labels.filter((l) => l % groups === g));
const scores = (hits: VectorHit[]) => hits.map((h) => Number(h.score.toFixed(5)));

describe('VectorIndex', () => {
  it('a filtered search for a few hits finds the nearest of 2,500, whatever order the vectors were added in', async () => {
    // The vector-copy contract's geometry: one memory on axis 0, 2,499 orthogonal to it and to the
    // query (score 0 each); four filter groups (namespaces), the target in group 1.
    const vectors = new Map<number, Float32Array>();
    for (let l = 1; l <= 2_500; l++) vectors.set(l, l === 1 ? axis(0) : noise(l));
    const q = axis(0);
    const inGroup = (l: number) => l % 4 === 1;
    const want = exact(vectors, q, 3, inGroup);
    expect(want[0]).toEqual({ label: 1, score: 1 });
    for (let seed = 1; seed <= 12; seed++) {
      const index = build(vectors, shuffled([...vectors.keys()], seed));
      const hits = await index.search(q, 3, group(1, 4));
      expect({ seed, top: hits[0] }).toEqual({ seed, top: { label: 1, score: 1 } });
      expect(scores(hits)).toEqual(scores(want));
      // Unfiltered too, and asked as wide as a search.
      expect((await index.search(q, 1))[0]).toEqual({ label: 1, score: 1 });
      expect((await index.search(q, 66, group(1, 4)))[0]).toEqual({ label: 1, score: 1 });
    }
  });

  it('stays exact through deletes, replaced vectors and reused slots, and after a save and load', async () => {
    const random = seededRandom(5);
    const vec = () => {
      const v = Float32Array.from({ length: DIMS }, () => random() - 0.5);
      const n = Math.hypot(...v);
      return v.map((x) => x / n);
    };
    const vectors = new Map<number, Float32Array>();
    for (let l = 1; l <= 3_000; l++) vectors.set(l, vec());
    const index = build(vectors, shuffled([...vectors.keys()], 1));
    // Half deleted, a quarter given new vectors (their freed slots reused), new labels added.
    for (let l = 1; l <= 3_000; l += 2) {
      index.remove(l);
      vectors.delete(l);
    }
    for (let l = 2; l <= 3_000; l += 4) {
      const v = vec();
      index.add(l, v);
      vectors.set(l, v);
    }
    for (let l = 3_001; l <= 3_400; l++) {
      const v = vec();
      index.add(l, v);
      vectors.set(l, v);
    }
    expect(index.size).toBe(vectors.size);
    const check = async (ix: VectorIndex) => {
      for (let i = 0; i < 20; i++) {
        const q = vec();
        const g = i % 5;
        const hits = await ix.search(q, 5, group(g, 5));
        const want = exact(vectors, q, 5, (l) => l % 5 === g);
        expect(hits.map((h) => h.label)).toEqual(want.map((h) => h.label));
        expect(scores(hits)).toEqual(scores(want));
        expect((await ix.search(q, 10)).map((h) => h.label)).toEqual(exact(vectors, q, 10, () => true).map((h) => h.label));
      }
    };
    await check(index);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'memstore-vecindex-'));
    try {
      const file = path.join(dir, 'ix');
      index.save(file, 'space', 7);
      const loaded = new VectorIndex();
      expect(loaded.load(file, 'space')?.mark).toBe(7);
      expect(loaded.size).toBe(vectors.size);
      await check(loaded);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('past its exact-scan limit walks the graph, and a saved index without the copy is rebuilt when loaded under a larger limit', async () => {
    const random = seededRandom(9);
    const vectors = new Map<number, Float32Array>();
    for (let l = 1; l <= 600; l++)
      vectors.set(
        l,
        Float32Array.from({ length: DIMS }, () => random() - 0.5),
      );
    const index = build(vectors, [...vectors.keys()], new VectorIndex({ exactMax: 500 }));
    expect(index.exact).toBe(false);
    const q = Float32Array.from({ length: DIMS }, () => random() - 0.5);
    const truth = exact(vectors, q, 5, (l) => l % 2 === 0);
    const want = truth.map((h) => h.label);
    const got = await index.search(q, 5, group(0, 2));
    expect(got.map((h) => h.label)).toEqual(want);
    // The graph's 16-bit vectors score within 0.001 of the float32 inner product.
    got.forEach((h, i) => expect(h.score).toBeCloseTo(truth[i].score, 3));
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'memstore-vecindex-'));
    try {
      const file = path.join(dir, 'ix');
      index.save(file, 'space', 1);
      expect(fs.existsSync(`${file}.rows`)).toBe(false);
      const graph = new VectorIndex({ exactMax: 500 });
      expect(graph.load(file, 'space')).not.toBeNull();
      expect((await graph.search(q, 5, group(0, 2))).map((h) => h.label)).toEqual(want);
      expect(new VectorIndex().load(file, 'space')).toBeNull();
      // A graph saved with float32 vectors (before decision record 0167) is rebuilt, never read as 16-bit.
      expect(new VectorIndex({ exactMax: 500, scalar: 'f32' }).load(file, 'space')).toBeNull();
      // So is a graph of another degree (before decision record 0168: 16).
      expect(new VectorIndex({ exactMax: 500, connectivity: 16 }).load(file, 'space')).toBeNull();
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
