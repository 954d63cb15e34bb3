import { MongoVectorCache } from './mongo-vector-cache';
import { dotAt, rng } from '../sqlite/sqlite-vector-ivf';

// The copy's ranking without a server (test/contract/mongo-vector-cache.spec.ts loads it from one).
describe('MongoVectorCache.top (exact scan of the in-process copy)', () => {
  const dims = 10;
  const random = rng(3);
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
      .map((id) => ({ id, score: Math.fround(dotAt(q, vectors.get(id) as Float32Array, 0)), order: at.get(id) as number }))
      .sort((a, b) => b.score - a.score || b.order - a.order)
      .slice(0, k);

  it('every held vector: the best k by dot product, best first, newest first on equal scores, dropped ones never', () => {
    for (const k of [1, 5, 37, 500]) expect(cache.top(q, k)).toEqual(expected([...vectors.keys()], k));
    const all = cache.top(q, 500);
    expect(all).toHaveLength(vectors.size - gone.length);
    const twin = all.findIndex((h) => h.id === 'twin-old');
    expect(all[twin - 1].id).toBe('m7');
  });

  it('only the ids a filter let through (unknown and dropped ones skipped)', () => {
    const only = ['m3', 'm50', 'nope', 'm120', 'm7', 'twin-old', 'm199', 'm60', 'm61'];
    expect(cache.top(q, 4, only)).toEqual(expected(only.filter((id) => vectors.has(id)), 4));
    expect(cache.top(q, 4, new Set(only))).toEqual(expected(only.filter((id) => vectors.has(id)), 4));
  });

  it('score(): the score top() gives the same memory', () => {
    for (const h of cache.top(q, 20)) expect(cache.score(q, h.id)).toBe(h.score);
    expect(cache.score(q, 'm1')).toBeUndefined();
  });
});
