import { hasPositiveTerms, parseSearchQuery, porterVariants, splitWords, toFts5Match } from './search-query';

describe('parseSearchQuery', () => {
  it('splits words, lower-cases them and drops duplicates', () => {
    expect(parseSearchQuery('Deploy deploy KUBERNETES').words).toEqual(['deploy', 'kubernetes']);
  });

  it('drops English stop words outside phrases', () => {
    const q = parseSearchQuery('what does the user prefer');
    expect(q.words).toEqual(['user', 'prefer']);
    expect(q.droppedStopWords).toEqual(['what', 'does', 'the']);
    expect(q.stopWordsOnly).toBe(false);
  });

  it('keeps stop words inside phrases', () => {
    const q = parseSearchQuery('"the quick fox" jumps');
    expect(q.phrases).toEqual([['the', 'quick', 'fox']]);
    expect(q.words).toEqual(['jumps']);
  });

  it('searches the stop words themselves when nothing else was given', () => {
    const q = parseSearchQuery('the who');
    expect(q.words).toEqual(['the', 'who']);
    expect(q.stopWordsOnly).toBe(true);
  });

  it('reads -word and -"a phrase" as exclusions', () => {
    const q = parseSearchQuery('deploy -staging -"blue green"');
    expect(q.words).toEqual(['deploy']);
    expect(q.excluded).toEqual([['staging'], ['blue', 'green']]);
  });

  it('treats a quoted single word as a required one-word phrase', () => {
    expect(parseSearchQuery('"the"').phrases).toEqual([['the']]);
  });

  it('tolerates an unclosed quote', () => {
    expect(parseSearchQuery('"blue green').phrases).toEqual([['blue', 'green']]);
  });

  it('splits on punctuation like a word tokenizer (hyphen, dot, apostrophe, underscore)', () => {
    expect(splitWords("node.js e-mail don't snake_case")).toEqual(['node', 'js', 'e', 'mail', 'don', 't', 'snake', 'case']);
  });

  it('keeps letters with accents and non-Latin scripts', () => {
    expect(parseSearchQuery('Café naïve Москва 東京').words).toEqual(['café', 'naïve', 'москва', '東京']);
  });

  it('has no positive terms for punctuation or exclusions only', () => {
    expect(hasPositiveTerms(parseSearchQuery('*** ( ) : ^'))).toBe(false);
    expect(hasPositiveTerms(parseSearchQuery('-foo'))).toBe(false);
    expect(hasPositiveTerms(parseSearchQuery(''))).toBe(false);
  });
});

describe('toFts5Match', () => {
  it('ORs the words', () => {
    expect(toFts5Match(parseSearchQuery('release kubernetes'))).toBe('"release" OR "kubernetes"');
  });

  it('requires phrases and lets words rank', () => {
    expect(toFts5Match(parseSearchQuery('"blue green" release'))).toBe('"blue green" AND ("blue green" OR "release")');
    expect(toFts5Match(parseSearchQuery('"a b" "c d"'))).toBe('"a b" AND "c d"');
  });

  it('adds exclusions with NOT', () => {
    expect(toFts5Match(parseSearchQuery('release -staging'))).toBe('("release") NOT ("staging")');
  });

  it('returns null when nothing positive is left', () => {
    expect(toFts5Match(parseSearchQuery('-staging'))).toBeNull();
    expect(toFts5Match(parseSearchQuery('"" ()'))).toBeNull();
  });

  it('never lets FTS5 syntax through from user input', () => {
    const hostile = ['NEAR(a b)', 'title:secret', 'a* OR b', '"unbalanced', "'; DROP TABLE memories; --", 'a AND NOT b', '^start', '{title content}:x', 'a + b'];
    for (const h of hostile) {
      const expr = toFts5Match(parseSearchQuery(h));
      // Only quoted strings of word characters, joined by our own operators.
      expect(expr).toMatch(/^[()]*"[\p{L}\p{N}\p{M} ]+"[()]*((\s(OR|AND|NOT)\s)[()]*"[\p{L}\p{N}\p{M} ]+"[()]*)*$/u);
    }
    // Operator words typed by the user are plain words, lower-cased (no longer FTS5 operators).
    expect(toFts5Match(parseSearchQuery('NEAR OR AND'))).toBe('"near"'); // or/and are stop words
  });
});

describe('porterVariants', () => {
  it('pairs a vowel+y word with its derived form, and back', () => {
    expect(porterVariants('deploy')).toEqual(['deploy', 'deployment']);
    expect(porterVariants('deployments')).toEqual(['deployments', 'deploy']);
    expect(porterVariants('deployer')).toEqual(['deployer', 'deploy']);
    expect(porterVariants('kubernetes')).toEqual(['kubernetes']);
    expect(porterVariants('key')).toEqual(['key']);
  });

  it('is used for words and single-word exclusions', () => {
    expect(toFts5Match(parseSearchQuery('deploy -employer'))).toBe('(("deploy" OR "deployment")) NOT (("employer" OR "employ"))');
  });
});
