import { dateBoost, resolveTime, type TimeRange } from './time-expressions';

// Every reference is fixed: nothing here reads the clock.
const SAT_20_MAY_2023 = new Date('2023-05-20T12:00:00Z');
const FRI_10_MAR_2023 = new Date('2023-03-10T12:00:00Z');
const day = (iso: string) => Date.parse(`${iso}T00:00:00Z`);

/** [start, end) as ISO days, or null. */
function range(q: string, ref = SAT_20_MAY_2023): [string, string] | null {
  const r = resolveTime(q, ref).range;
  if (!r) return null;
  const iso = (ms: number) => (Number.isFinite(ms) ? new Date(ms).toISOString().slice(0, 10) : String(ms));
  return [iso(r.start), iso(r.end)];
}

describe('resolveTime: expressions resolved against the reference', () => {
  it.each<[string, string, string]>([
    ['what did I note last week about the deploy', '2023-05-08', '2023-05-15'], // the calendar week (Monday first) before the reference's
    ['yesterday', '2023-05-19', '2023-05-20'],
    ['what happened today', '2023-05-20', '2023-05-21'],
    ['two months ago', '2023-03-01', '2023-04-01'],
    ['5 days ago', '2023-05-15', '2023-05-16'],
    ['3 weeks ago', '2023-04-24', '2023-05-01'],
    ['last month', '2023-04-01', '2023-05-01'],
    ['last year', '2022-01-01', '2023-01-01'],
    ['on 8 May 2023', '2023-05-08', '2023-05-09'],
    ['Who did Maria have dinner with on May 3, 2023?', '2023-05-03', '2023-05-04'],
    ['What movie did Joanna watch on 1 May, 2022?', '2022-05-01', '2022-05-02'],
    ['What did Joanna accomplish in January 2022?', '2022-01-01', '2022-02-01'],
    ['in 2022', '2022-01-01', '2023-01-01'],
    ['what did we decide during 2021 about pricing', '2021-01-01', '2022-01-01'],
    ['since March', '2023-03-01', '2023-05-20'],
    ['after 2020', '2021-01-01', '2023-05-20'],
    ['the week before 8 May 2023', '2023-05-01', '2023-05-08'],
    ['the week after 8 May 2023', '2023-05-09', '2023-05-16'],
    ['Where was John between August 11 and August 15 2022?', '2022-08-11', '2022-08-16'],
    ['from May 1 to May 5 2023', '2023-05-01', '2023-05-06'],
    ['in the past 3 days', '2023-05-17', '2023-05-20'],
    ['last weekend', '2023-05-13', '2023-05-15'],
    ['last Friday', '2023-05-19', '2023-05-20'],
    ['last summer', '2022-06-01', '2022-09-01'],
    ['in the summer of 2021', '2021-06-01', '2021-09-01'],
    ['this spring', '2023-03-01', '2023-06-01'],
  ])('%s', (q, start, end) => {
    expect(range(q)).toEqual([start, end]);
  });

  it('reads a month or weekday without a year as the last one before the reference (memories are about the past)', () => {
    expect(range('Which outdoor spot did Joanna visit in May?', FRI_10_MAR_2023)).toEqual(['2022-05-01', '2022-06-01']);
    expect(range('Which outdoor spot did Joanna visit in May?', SAT_20_MAY_2023)).toEqual(['2023-05-01', '2023-06-01']);
    expect(range('in December', FRI_10_MAR_2023)).toEqual(['2022-12-01', '2023-01-01']);
    expect(range('on Sunday', FRI_10_MAR_2023)).toEqual(['2023-03-05', '2023-03-06']);
    expect(range('last summer', FRI_10_MAR_2023)).toEqual(['2022-06-01', '2022-09-01']);
    // Relative expressions that point ahead stay ahead.
    expect(range('tomorrow')).toEqual(['2023-05-21', '2023-05-22']);
  });

  it('reads a day right before "before X" as that day in the week before X, and lets explicit dates outweigh relative words beside them', () => {
    expect(range('What did Maria do last weekend before April 10, 2023?', new Date('2023-08-20T00:00:00Z'))).toEqual(['2023-04-03', '2023-04-10']);
    expect(range('What was shown on the Sunday before October 25, 2022?', new Date('2022-11-10T00:00:00Z'))).toEqual(['2022-10-18', '2022-10-25']);
    // "last week" here is the week before 6 November, not before the reference.
    expect(range("What was Tim's writing issue last week, as mentioned on November 6, 2023?", new Date('2024-01-10T00:00:00Z'))).toEqual(['2023-11-06', '2023-11-07']);
  });

  it('"before X" reaches back without a start, at half strength', () => {
    const r = resolveTime('before June 2022', SAT_20_MAY_2023).range as TimeRange;
    expect(r.start).toBe(-Infinity);
    expect(r.end).toBe(day('2022-06-01'));
    expect(r.strength).toBe(0.5);
  });

  it('weighs explicit dates above implied years and vague words', () => {
    const strength = (q: string) => resolveTime(q, SAT_20_MAY_2023).range?.strength;
    expect(strength('on 8 May 2023')).toBe(1);
    expect(strength('last week')).toBe(1);
    expect(strength('in May')).toBe(0.8);
    expect(strength('a few weeks ago')).toBe(0.5);
  });

  it.each([
    'When did Melanie paint a sunrise?',
    'How many days ago did I watch the Super Bowl?',
    'What year did Tim go to the Smoky Mountains?',
    'we march on',
    'I may have said so',
    'did I fall off the bike',
    'meet at 5',
    'what is true now',
    'the day after my birthday',
    'I ate 2 apples and 2022 grapes',
    'version 1.2.3 release notes',
    '',
  ])('finds no time in %j', (q) => {
    expect(resolveTime(q, SAT_20_MAY_2023).range).toBeNull();
  });

  it('never reads a quoted phrase or an excluded term as a time', () => {
    expect(range('When did Melanie read the book "Summer of 2019"?')).toBeNull();
    expect(range('notes -yesterday')).toBeNull();
    expect(range('"last week" retro notes')).toBeNull();
  });

  it('an invalid reference resolves nothing', () => {
    expect(resolveTime('yesterday', new Date(Number.NaN)).range).toBeNull();
  });
});

describe('resolveTime: keyword text', () => {
  const kw = (q: string) => resolveTime(q, SAT_20_MAY_2023).keywordText;

  it('drops the relative words of a time expression', () => {
    expect(kw('what did I note last week about the deploy')).toBe('what did I note about the deploy');
    expect(kw('What was the social media activity I participated 5 days ago?')).toBe('What was the social media activity I participated ?');
    expect(kw('where did we go last summer')).toBe('where did we go summer');
    expect(kw('what did Anna say two months ago about rent')).toBe('what did Anna say about rent');
    expect(kw('What did John do the week before August 3, 2023 with his kids?')).toBe('What did John do August 3, 2023 with his kids?');
  });

  it('keeps what names a date: a memory may write it', () => {
    expect(kw('Who did Maria have dinner with on May 3, 2023?')).toBe('Who did Maria have dinner with on May 3, 2023?');
    expect(kw('trips in 2022')).toBe('trips in 2022');
    expect(kw('notes since March')).toBe('notes since March');
  });

  it('keeps the question whole when only stop words would be left', () => {
    expect(kw('what did I do yesterday')).toBe('what did I do yesterday');
    expect(kw('two months ago')).toBe('two months ago');
  });
});

describe('dateBoost', () => {
  const lastWeek: TimeRange = { start: day('2023-05-08'), end: day('2023-05-15'), strength: 1, text: 'last week' };

  it('is the strength inside the range and fades to 0 outside it, slower after it than before', () => {
    expect(dateBoost(day('2023-05-10'), lastWeek)).toBe(1);
    expect(dateBoost(day('2023-05-10'), { ...lastWeek, strength: 0.5 })).toBe(0.5);
    const after = dateBoost(day('2023-05-17'), lastWeek);
    const before = dateBoost(day('2023-05-06'), lastWeek);
    expect(after).toBeGreaterThan(0);
    expect(after).toBeLessThan(1);
    expect(before).toBeLessThan(after);
    expect(dateBoost(day('2023-03-01'), lastWeek)).toBe(0);
    expect(dateBoost(day('2023-06-30'), lastWeek)).toBe(0);
  });

  it('is 0 without a range or a time', () => {
    expect(dateBoost(day('2023-05-10'), null)).toBe(0);
    expect(dateBoost(undefined, lastWeek)).toBe(0);
  });

  it('covers everything before the end of an open "before" range', () => {
    expect(dateBoost(day('1999-01-01'), { start: -Infinity, end: day('2022-06-01'), strength: 0.5, text: 'before June 2022' })).toBe(0.5);
  });
});
