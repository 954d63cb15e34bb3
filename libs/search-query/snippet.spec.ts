import { parseSearchQuery } from './search-query';
import { foldForMatch, snippetAround } from './snippet';

describe('snippetAround', () => {
  const long = `${'alpha beta gamma '.repeat(30)}The Café serves deployments daily. ${'delta epsilon '.repeat(30)}`;

  it('cuts a passage around the first matching word, marking the cuts', () => {
    const s = snippetAround(long, parseSearchQuery('cafe'))!;
    expect(s).toContain('Café serves');
    expect(s.startsWith('…')).toBe(true);
    expect(s.endsWith('…')).toBe(true);
    expect(s.length).toBeLessThanOrEqual(203);
  });

  it('tolerates suffixes ("deploy" finds "deployments") and case', () => {
    expect(snippetAround(long, parseSearchQuery('DEPLOY'))).toContain('deployments');
  });

  it('prefers a phrase position and returns null when nothing occurs', () => {
    expect(snippetAround(long, parseSearchQuery('"serves deployments"'))).toContain('serves deployments');
    expect(snippetAround(long, parseSearchQuery('zeppelin'))).toBeNull();
  });

  it('returns short content whole', () => {
    expect(snippetAround('a tiny note about cafés', parseSearchQuery('cafe'))).toBe('a tiny note about cafés');
  });

  it('folds case and accents without moving positions', () => {
    expect(foldForMatch('ÉCOLE Müller 🚀 x')).toBe('ecole muller 🚀 x');
    expect(foldForMatch('ÉCOLE Müller 🚀 x').length).toBe('ÉCOLE Müller 🚀 x'.length);
  });
});
