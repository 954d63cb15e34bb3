import { MongoVectorCache } from './mongo-vector-cache';
import { dot } from '../vector/vector-index';
import { seededRandom } from '../../../test/support/rng';

// The index's ranking without a server (test/contract/mongo-vector-cache.spec.ts loads it from one).
describe('MongoVectorCache.top (the in-process vector index)', () => {
  const dims = 10;
  const random = seededRandom(3);
  const cache = new MongoVectorCache();
  const vectors = new Map<string, Float32Array>();
  const at = new Map<string, number>();
  for (let i = 0; i < 203; i++) {
    const v = Float32Array.from({ length: dims }, () => random() - 0.5);
    vectors.set(`m${i}`, v);
    at.set(`m${i}`, 1_000 + i);
  }
  // Equal vectors: equal scores, the newest first.
  vectors.set('twin-old', vectors.get('m7') as Float32Array);
  at.set('twin-old', 10);
  for (const [id, v] of vectors) cache.put(id, v, at.get(id) as number);
  const gone = ['m1', 'm50', 'm51', 'm202'];
  cache.drop(gone);
  const q = Float32Array.from({ length: dims }, () => random() - 0.5);

  const expected = (ids: string[], k: number) =>
    ids
      .filter((id) => !gone.includes(id))
      .map((id) => ({ id, score: dot(q, vectors.get(id) as Float32Array), order: at.get(id) as number }))
      .sort((a, b) => b.score - a.score || b.order - a.order)
      .slice(0, k);

  const close = (got: Array<{ id: string; score: number; order: number }>, want: Array<{ id: string; score: number; order: number }>) => {
    expect(got.map((h) => h.id)).toEqual(want.map((h) => h.id));
    got.forEach((h, i) => expect(h.score).toBeCloseTo(want[i].score, 5));
  };

  it('every held vector: the best k by dot product, best first, newest first on equal scores, dropped ones never', async () => {
    for (const k of [1, 5, 37, 500]) close(await cache.top(q, k), expected([...vectors.keys()], k));
    const all = await cache.top(q, 500);
    expect(all).toHaveLength(vectors.size - gone.length);
    const twin = all.findIndex((h) => h.id === 'twin-old');
    expect(all[twin - 1].id).toBe('m7');
  });

  it('only the ids a filter lets through (dropped ones never), k of them when k pass however far down they rank', async () => {
    const only = new Set(['m3', 'm50', 'nope', 'm120', 'm7', 'twin-old', 'm199', 'm60', 'm61']);
    const asked: number[] = [];
    const accept = async (ids: string[]) => {
      asked.push(ids.length);
      return new Set(ids.filter((id) => only.has(id)));
    };
    close(
      await cache.top(q, 4, accept),
      expected(
        [...only].filter((id) => vectors.has(id)),
        4,
      ),
    );
    // The worst-ranked memories: found by asking the graph for more.
    const worst = expected([...vectors.keys()], 500)
      .slice(-3)
      .map((h) => h.id);
    const hits = await cache.top(q, 3, async (ids) => new Set(ids.filter((id) => worst.includes(id))));
    expect(hits.map((h) => h.id).sort()).toEqual([...worst].sort());
    expect(asked[0]).toBeLessThan(vectors.size - gone.length); // the first round did not take the whole index
  });
});
