import { TermWindow, windowScores } from './sqlite-ranking';
import { seededRandom } from '../../../test/support/rng';

/** What rankedSearch did before windowScores: a map of sums term by term, the required terms' intersection, one full sort. */
function byMapAndSort(hits: TermWindow[]): Array<{ seq: number; score: number }> {
  const scores = new Map<number, number>();
  for (const h of hits) {
    const titles = new Set(h.titleTags);
    for (const r of h.rows) {
      const add = h.idf * (titles.has(r) ? 3 : 1);
      const prev = scores.get(r);
      scores.set(r, prev === undefined ? add : prev + add);
    }
  }
  const required = hits.filter((h) => h.required).map((h) => new Set(h.rows));
  const candidates = [...scores.keys()].filter((r) => required.every((set) => set.has(r)));
  return candidates.map((seq) => ({ seq, score: scores.get(seq) as number })).sort((a, b) => b.score - a.score || b.seq - a.seq);
}

/** `count` distinct rowids of [1, max], descending. */
function rowids(random: () => number, count: number, max: number): number[] {
  const set = new Set<number>();
  while (set.size < Math.min(count, max)) set.add(1 + Math.floor(random() * max));
  return [...set].sort((a, b) => b - a);
}

/** Terms over a small rowid range (many rows in several windows), with repeated idfs (ties). */
function windows(seed: number): TermWindow[] {
  const random = seededRandom(seed);
  const terms = 1 + Math.floor(random() * 4);
  const max = 50 + Math.floor(random() * 400);
  return Array.from({ length: terms }, () => {
    const rows = rowids(random, Math.floor(random() * 120), max);
    // Title and tag hits: some of the window's rows, and some rows outside it (the tt table is not filtered by exclusions).
    const titleTags = [...new Set([...rows.filter(() => random() < 0.2), ...rowids(random, 5, max)])].sort((a, b) => b - a);
    return { rows, titleTags, idf: [0.7, 1.3, 2.9][Math.floor(random() * 3)], required: random() < 0.3 };
  });
}

describe('windowScores (the windowed ranking of a keyword search)', () => {
  it('scores and orders the candidates as summing in a map and sorting them all did, for every page', () => {
    for (let seed = 1; seed <= 300; seed++) {
      const hits = windows(seed);
      const expected = byMapAndSort(hits);
      const scored = windowScores(hits);
      expect(scored.count).toBe(expected.length);
      // Candidates in descending rowid order (rankedSearch counts those inside the complete window as a prefix).
      const seqs = Array.from(scored.seqs.subarray(0, scored.count));
      expect(seqs).toEqual([...seqs].sort((a, b) => b - a));
      for (const limit of [0, 1, 10, 20, 50, expected.length, expected.length + 5]) {
        expect(scored.best(limit)).toEqual(expected.slice(0, limit));
      }
    }
  });

  it('keeps only the rows a filter kept, in the same order and with the same scores', () => {
    const hits = windows(7);
    const scored = windowScores(hits);
    const all = Array.from(scored.seqs.subarray(0, scored.count));
    const kept = new Set(all.filter((_, i) => i % 3 === 0));
    const filtered = scored.keep(kept);
    expect(Array.from(filtered.seqs.subarray(0, filtered.count))).toEqual(all.filter((s) => kept.has(s)));
    expect(filtered.best(1000)).toEqual(byMapAndSort(hits).filter((x) => kept.has(x.seq)));
  });

  it('counts a title or tag hit three times and a term found twice in the query twice', () => {
    const scored = windowScores([
      { rows: [9, 5, 2], titleTags: [5], idf: 1, required: false },
      { rows: [5, 4], titleTags: [], idf: 2, required: false },
      { rows: [5, 4], titleTags: [4], idf: 2, required: false },
    ]);
    expect(scored.best(10)).toEqual([
      { seq: 4, score: 2 + 6 },
      { seq: 5, score: 3 + 2 + 2 },
      { seq: 9, score: 1 },
      { seq: 2, score: 1 },
    ]);
  });
});
