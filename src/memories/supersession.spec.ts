import type { MemoryDoc } from '../backends/ports/memory.model';
import { parseMarkdown, toMarkdown } from './memory-markdown';
import { preferNewerNearDuplicates, recencyPrior } from './recency-prior';
import { markLikelyUpdates, updateHint } from './supersession';

const at = (d: string) => new Date(`2026-${d}T00:00:00.000Z`);
const doc = (id: string, content: string, created: string, extra: Partial<MemoryDoc> = {}): MemoryDoc => ({
  id,
  namespace: 'default',
  title: null,
  type: 'fact',
  scope: 'global',
  tags: [],
  agent: null,
  project: null,
  content,
  createdAt: at(created),
  updatedAt: at(created),
  version: 1,
  ...extra,
});

describe('recency prior (decision 0131)', () => {
  const row = (id: string, snippet: string, created: string) => ({ id, title: null, snippet, createdAt: at(created) });

  it('puts the newer of two near-duplicate hits first and leaves every other row in its place', () => {
    const rows = [
      row('old', 'The user was pre-approved for a mortgage of $350,000 by Wells Fargo', '05-01'),
      row('other', 'Oat milk in coffee, never dairy', '07-01'),
      row('new', 'The user was pre-approved for a mortgage of $400,000 by Wells Fargo', '06-01'),
    ];
    expect(recencyPrior(rows).map((r) => r.id)).toEqual(['new', 'other', 'old']);
    // Not near-duplicates: the ranked order stands.
    expect(recencyPrior([rows[1], rows[0]]).map((r) => r.id)).toEqual(['other', 'old']);
  });

  it('orders a group linked transitively newest first within the places it held', () => {
    const rows = ['a', 'b', 'c', 'd'].map((id, i) => ({ id, createdAt: at(`0${i + 1}-01`) }));
    const near = (x: { id: string }, y: { id: string }) => [x.id, y.id].sort().join('') === 'ab' || [x.id, y.id].sort().join('') === 'bd';
    expect(preferNewerNearDuplicates(rows, near).map((r) => r.id)).toEqual(['d', 'b', 'c', 'a']);
  });
});

describe('supersession fields', () => {
  it('round-trip through the stored markdown (export, import and reindex read it)', () => {
    const d = doc('0123456789abcdef01234567', 'old value', '05-01', { supersededBy: 'fedcba9876543210fedcba98', validTo: at('06-01') });
    const text = toMarkdown(d);
    expect(text).toMatch(/^superseded_by: fedcba9876543210fedcba98$/m);
    expect(parseMarkdown(text)).toMatchObject({ supersededBy: 'fedcba9876543210fedcba98', validTo: at('06-01') });
    expect(toMarkdown(doc('0123456789abcdef01234567', 'x', '05-01'))).not.toMatch(/superseded_by|valid_to/);
    expect(() => parseMarkdown(text.replace('fedcba9876543210fedcba98', '../x'))).toThrow(/superseded_by/);
  });

  it('marks an older near-copy with other words as a likely update, and an exact copy not', async () => {
    const fresh = doc('0123456789abcdef0123456a', 'Pre-approved for $400,000', '06-01');
    const stored = new Map([
      ['0123456789abcdef01234561', doc('0123456789abcdef01234561', 'Pre-approved for $350,000', '05-01')],
      ['0123456789abcdef01234562', doc('0123456789abcdef01234562', 'pre-approved  for $400,000', '05-02')],
    ]);
    const hits = [...stored.keys()].map((id) => ({ id, title: null, score: 0.9 }));
    const marked = await markLikelyUpdates(fresh, hits, async (id) => stored.get(id) ?? null);
    expect(marked.map((h) => h.likely_update)).toEqual([true, false]);
    expect(updateHint(marked)).toContain('supersedes: ["0123456789abcdef01234561"]');
    expect(updateHint(marked.filter((h) => !h.likely_update))).toBeUndefined();
  });
});
