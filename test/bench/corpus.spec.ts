/**
 * The benchmark corpus must be the same on every machine (the lead compares runs) and look like
 * real memories: valid for the API, Zipf-distributed words, queries that hit some rows but not all.
 */
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { Corpus, MEMORY_TYPES, MEMORY_SCOPES } = require('../../bench/lib/corpus');

describe('bench corpus', () => {
  const corpus = new Corpus(42);
  type Memory = { content: string; title?: string; type: string; scope: string; tags: string[] };
  const sample: Memory[] = Array.from({ length: 2000 }, (_, i) => corpus.memory(i, 0));

  it('is deterministic for a seed and differs between seeds and streams', () => {
    const again = new Corpus(42);
    expect(again.memory(123, 0)).toEqual(corpus.memory(123, 0));
    expect(again.queries(16)).toEqual(corpus.queries(16));
    expect(new Corpus(7).memory(123, 0)).not.toEqual(corpus.memory(123, 0));
    expect(corpus.memory(123, 1)).not.toEqual(corpus.memory(123, 0));
  });

  it('produces memories the API accepts (CONTRACT §3 limits)', () => {
    for (const m of sample) {
      expect(m.content.trim().length).toBeGreaterThan(0);
      expect(Buffer.byteLength(m.content)).toBeLessThan(1024 * 1024);
      if (m.title !== undefined) expect(m.title.length).toBeLessThanOrEqual(300);
      expect(MEMORY_TYPES).toContain(m.type);
      expect(MEMORY_SCOPES).toContain(m.scope);
      expect(m.tags.length).toBeLessThanOrEqual(50);
      expect(new Set(m.tags).size).toBe(m.tags.length);
    }
    const types = new Set(sample.map((m) => m.type));
    expect(types.size).toBe(MEMORY_TYPES.length);
  });

  it('has a Zipf-like word distribution and realistic query hit rates', () => {
    const df = new Map<string, number>();
    for (const m of sample) for (const w of new Set<string>(m.content.toLowerCase().match(/[a-z]+/g) ?? [])) df.set(w, (df.get(w) ?? 0) + 1);
    const ranked = [...df.values()].sort((a, b) => b - a);
    expect(ranked[0]).toBeGreaterThan(0.9 * sample.length); // "the" is everywhere
    expect(ranked[0] / ranked[200]).toBeGreaterThan(5); // a long tail, not a flat vocabulary
    const q = corpus.queries(64);
    const oneWordHits = q.one.map((w: string) => (df.get(w) ?? 0) / sample.length).sort((a: number, b: number) => a - b);
    const median = oneWordHits[oneWordHits.length >> 1];
    expect(median).toBeGreaterThan(0.005);
    expect(median).toBeLessThan(0.6);
    const text = sample.map((m) => m.content.toLowerCase()).join('\n');
    const phrasesFound = q.phrase.filter((p: string) => text.includes(p.replace(/"/g, ''))).length;
    expect(phrasesFound).toBeGreaterThanOrEqual(0.9 * q.phrase.length);
    expect(q.question.every((s: string) => / the | we | a | and /.test(` ${s} `))).toBe(true);
  });
});
