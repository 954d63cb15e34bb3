import { parseSearchQuery } from '../../../libs/search-query';
import { escapeRegex, foldAccents, lightStem, phrasePattern, rankByMatches, regexSearchFilter, wordPattern } from './regex-search';
import { makeSnippet } from './snippet';

describe('regex fallback search (servers without text indexes)', () => {
  it('escapes every regex syntax character', () => {
    const hostile = '.*+?^${}()|[]\\/';
    const re = new RegExp(escapeRegex(hostile), 'u');
    expect(re.test(`x${hostile}y`)).toBe(true);
    expect(re.test('anything else')).toBe(false);
  });

  it('folds accents and stems English words lightly', () => {
    expect(foldAccents('Café déjà')).toBe('Cafe deja');
    expect(lightStem('deploying')).toBe(lightStem('deploy'));
    expect(lightStem('deployments')).toBe(lightStem('deploy'));
    expect(lightStem('Deployed')).toBe(lightStem('deploy'));
    expect(lightStem('memories')).toBe(lightStem('memory'));
    expect(lightStem('cat')).toBe('cat');
    expect(lightStem('v1024s')).toBe('v1024s'); // words with digits are left alone
  });

  it('matches a word at the start of a word, any case, any accent, any form', () => {
    const re = new RegExp(wordPattern('deploy'), 'iu');
    for (const hit of ['Deployment done', 'we DEPLOYED it', 'auto-deploys', 'deploy']) expect(re.test(hit)).toBe(true);
    for (const miss of ['redeploy', 'employ']) expect(re.test(miss)).toBe(false);
    const cafe = new RegExp(wordPattern('cafe'), 'iu');
    expect(cafe.test('Le Café')).toBe(true);
    expect(new RegExp(wordPattern('café'), 'iu').test('cafe latte')).toBe(true);
  });

  it('matches a phrase only with its words in order', () => {
    const re = new RegExp(phrasePattern(['blue', 'green']), 'iu');
    expect(re.test('a Blue-Green deployment')).toBe(true);
    expect(re.test('green blue')).toBe(false);
    expect(re.test('blue greenish')).toBe(false);
  });

  it('builds a filter of escaped patterns only (user text never reaches a regex raw)', () => {
    const filter = regexSearchFilter(parseSearchQuery('a.*b (x|y) "c+d" -e$'));
    const patterns = JSON.stringify(filter).match(/"\$regex":"((?:[^"\\]|\\.)*)"/g) ?? [];
    expect(patterns.length).toBeGreaterThan(0);
    for (const p of patterns) expect(p).not.toMatch(/\.\*|\(x\|y\)|\$"/);
    expect(regexSearchFilter(parseSearchQuery('-only -exclusions'))).toBeNull();
  });

  it('ranks more words, rarer words and title or tag hits higher', () => {
    const docs = [
      { id: 'content', title: null, tags: [], content: 'kubernetes cluster notes' },
      { id: 'title', title: 'Kubernetes', tags: [], content: 'notes' },
      { id: 'both', title: null, tags: [], content: 'kubernetes upgrade of the cluster' },
      { id: 'tag', title: null, tags: ['kubernetes'], content: 'other' },
    ];
    const score = (q: string) => Object.fromEntries(rankByMatches(docs, parseSearchQuery(q), docs.length).map((r) => [r.doc.id, r.score]));
    const k = score('kubernetes');
    expect(k.title).toBeGreaterThan(k.tag);
    expect(k.tag).toBeGreaterThan(k.content);
    const two = score('kubernetes upgrade');
    expect(two.both).toBeGreaterThan(two.content);
  });

  it('ranks a memory holding every query word in its content above one with a single word in its title', () => {
    const docs = [
      { id: 'title-only', title: 'Rollback', tags: [], content: 'see the runbook' },
      { id: 'all-words', title: null, tags: [], content: 'the rollback of the payment service failed during the deploy' },
      ...Array.from({ length: 6 }, (_, i) => ({ id: `filler-${i}`, title: null, tags: [], content: `payment service note ${i}` })),
    ];
    const ranked = rankByMatches(docs, parseSearchQuery('rollback payment deploy'), docs.length);
    ranked.sort((a, b) => b.score - a.score);
    expect(ranked[0].doc.id).toBe('all-words');
    expect(ranked.findIndex((r) => r.doc.id === 'title-only')).toBeGreaterThan(0);
    expect(ranked.find((r) => r.doc.id === 'all-words')!.score).toBeGreaterThan(ranked.find((r) => r.doc.id === 'title-only')!.score);
  });

  it('snippets show the passage around the first match', () => {
    const content = `${'intro '.repeat(80)}the deployment failed on friday ${'outro '.repeat(80)}`;
    const s = makeSnippet(content, [new RegExp(wordPattern('deploy'), 'iu')]);
    expect(s).toContain('deployment failed');
    expect(s.startsWith('…')).toBe(true);
    expect(makeSnippet('short text')).toBe('short text');
  });
});
