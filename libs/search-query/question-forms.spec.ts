import { asksForTotal, comparisonSides } from './question-forms';

const own = (q: string) => comparisonSides(q).map((s) => s.own);

describe('comparisonSides', () => {
  it('splits "which first, A or B" after the last comma, each side with the head words', () => {
    const sides = comparisonSides("Who did I meet first, the woman selling jam at the farmer's market or the tourist from Australia?");
    expect(sides.map((s) => s.own)).toEqual([
      ['woman', 'selling', 'jam', 'farmer', 'market'],
      ['tourist', 'australia'],
    ]);
    expect(sides[1].words).toEqual(['meet', 'first', 'tourist', 'australia']);
    expect(own('Who became a parent first, Tom or Alex?')).toEqual([['tom'], ['alex']]);
  });

  it('splits "between A and B" when the head asks for a span of time, without the words that frame it', () => {
    const sides = comparisonSides("How many months passed between the completion of my undergraduate degree and the submission of my master's thesis?");
    expect(sides.map((s) => s.words)).toEqual([
      ['completion', 'undergraduate', 'degree'],
      ['submission', 'master', 'thesis'],
    ]);
    expect(sides.map((s) => s.own)).toEqual(sides.map((s) => s.words));
    expect(comparisonSides('How long between my trip to Kyoto and the move to Osaka?').map((s) => s.words)).toEqual([
      ['trip', 'kyoto'],
      ['move', 'osaka'],
    ]);
  });

  it('leaves other questions whole', () => {
    expect(own('What is the topic of discussion between John and Tim on 11 December, 2023?')).toEqual([]); // not a span of time
    expect(own('Did I mostly recently increase or decrease the limit on cups of coffee?')).toEqual([]); // no clause of alternatives
    expect(own("I'm trying to decide whether to buy a NAS device now or wait. What do you think?")).toEqual([]);
    expect(own('Which came first, or the deploy?')).toEqual([]); // one side alone is no comparison
    expect(own('harbour lantern')).toEqual([]);
  });
});

describe('asksForTotal', () => {
  it.each([
    ['How many fun runs did I miss in March due to work commitments?', true],
    ['How much money did I raise in total through all the charity events?', true],
    ['What is the total cost of the new food bowl and the dental chews?', true],
    ['How many days ago did I watch the Super Bowl?', false], // one span of time
    ['How many weeks passed between Maria adopting Coco and Shadow?', false],
    ['Where did I buy my new bookshelf from?', false],
  ])('%s → %s', (q, expected) => {
    expect(asksForTotal(q)).toBe(expected);
  });
});
