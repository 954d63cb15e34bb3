import { termMatcher, wordStartIndex } from './term-match';

describe('wordStartIndex', () => {
  it('finds a needle only where a word starts', () => {
    expect(wordStartIndex('redeploy, then deploy', 'deploy')).toBe(15);
    expect(wordStartIndex('redeploy', 'deploy')).toBe(-1);
    expect(wordStartIndex('deploy', 'deploy')).toBe(0);
    expect(wordStartIndex('(deploy)', 'deploy')).toBe(1);
  });

  it('reads the whole character before a hit: an astral letter continues a word, an emoji does not', () => {
    expect(wordStartIndex('\u{1D400}deploy', 'deploy')).toBe(-1);
    expect(wordStartIndex('\u{1F600}deploy', 'deploy')).toBe(2);
    // A lone low surrogate (JSON may carry one) is no letter, whatever stands before it.
    expect(wordStartIndex('a\udc00deploy', 'deploy')).toBe(2);
  });

  it('never matches an empty needle', () => {
    expect(wordStartIndex('anything', '')).toBe(-1);
  });
});

describe('termMatcher', () => {
  it('counts a word whose light stem starts a word of the title, tags or content, accents and case ignored', () => {
    const match = termMatcher('deploying café "blue green"');
    expect(match('Deployments', [], 'nothing else')).toEqual({ words: ['deploying'], phrases: [] });
    expect(match(null, ['CAFÉ'], 'redeploy')).toEqual({ words: ['café'], phrases: [] });
    expect(match(null, [], 'a blue-green rollout')).toEqual({ words: ['blue', 'green'], phrases: [0] });
    expect(match(null, [], 'green, then blue')).toEqual({ words: ['blue', 'green'], phrases: [] });
  });
});
