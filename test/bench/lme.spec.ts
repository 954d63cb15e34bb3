/**
 * The LongMemEval-S part of `npm run eval` (bench/lib/lme.js): which questions a run takes, how a
 * haystack becomes memories, and what its figures mean (recall by type, abstention, newest first).
 */
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { pick, haystack, score, TYPES } = require('../../bench/lib/lme');

interface Q {
  question_id: string;
  question_type: string;
  answer_session_ids: string[];
  haystack_session_ids: string[];
  haystack_dates: string[];
  haystack_sessions: Array<Array<{ role: string; content: string; has_answer?: boolean }>>;
}

/** A knowledge update: s-old (May) and s-new (June) hold the answer, s-x does not. */
function question(id = 'ku1', type = 'knowledge-update'): Q {
  return {
    question_id: id,
    question_type: type,
    answer_session_ids: ['s-old', 's-new'],
    haystack_session_ids: ['s-new', 's-x', 's-old'],
    haystack_dates: ['2023/06/10 (Sat) 10:00', '2023/05/20 (Sat) 09:00', '2023/05/01 (Mon) 08:00'],
    haystack_sessions: [
      [
        { role: 'user', content: 'pre-approved for $400,000', has_answer: true },
        { role: 'assistant', content: 'congratulations' },
      ],
      [
        { role: 'user', content: 'oat milk' },
        { role: 'assistant', content: '' },
      ],
      [{ role: 'user', content: 'pre-approved for $350,000', has_answer: true }],
    ],
  };
}

/** One result of lib/lme.js runQuestion, with the rows of one mode as indexes into the haystack's turns. */
function result(q: Q, got: number[]) {
  return { q, turns: haystack(q).turns, perMode: { hybrid: { got, ran: 'hybrid', tries: 1 } } };
}

describe('LongMemEval-S eval', () => {
  it('stores each non-empty turn with its session date, in session order, in the question project', () => {
    const h = haystack(question());
    const lines = h.jsonl
      .trim()
      .split('\n')
      .map((l: string) => JSON.parse(l));
    expect(h.empty).toBe(1);
    expect(lines).toHaveLength(4);
    expect(lines[1]).toEqual({
      title: '2023/06/10 (Sat) 10:00 — assistant',
      content: 'congratulations',
      tags: ['s-new'],
      type: 'conversation',
      project: 'lme-ku1',
      created_at: '2023-06-10T10:00:01.000Z',
      updated_at: '2023-06-10T10:00:01.000Z',
    });
  });

  it('samples N answerable questions per type and every abstention question, one stratum after another', () => {
    const qs = TYPES.flatMap((t: string) => [1, 2, 3].map((i) => question(`${t}-${i}`, t))).concat([question('a_abs'), question('b_abs', 'multi-session')]);
    const sample = pick(qs, 'sample');
    expect(sample).toHaveLength(TYPES.length * 2 + 2);
    expect(sample.slice(0, 7).map((q: Q) => (q.question_id.endsWith('_abs') ? 'abstention' : q.question_type))).toEqual([...TYPES, 'abstention']);
    expect(pick(qs, 'sample').map((q: Q) => q.question_id)).toEqual(sample.map((q: Q) => q.question_id));
    expect(pick(qs, 'all')).toHaveLength(qs.length);
    expect(pick(qs, 'x', ['b_abs']).map((q: Q) => q.question_id)).toEqual(['b_abs']);
  });

  it('scores session and turn recall, and newest first on knowledge updates', () => {
    // Turns: 0 new answer, 1 new other, 2 oat milk, 3 old answer.
    const newestAbove = score([result(question(), [0, 2, 3])], 'hybrid');
    expect(newestAbove.answerable.session).toEqual({ r1: 0.5, r5: 1, r10: 1 });
    expect(newestAbove.answerable.turn).toEqual({ r1: 0.5, r5: 1, r10: 1 });
    expect(newestAbove.knowledgeUpdate).toEqual({ n: 1, newestFirstRate: 1, nBoth: 1, newestAboveOlderRate: 1 });
    // The newest session's best row is a turn without the answer: its answer turn counts, below the old one.
    const olderAbove = score([result(question(), [1, 3, 0])], 'hybrid');
    expect(olderAbove.knowledgeUpdate).toEqual({ n: 1, newestFirstRate: 0, nBoth: 1, newestAboveOlderRate: 0 });
    const newestMissing = score([result(question(), [3, 2])], 'hybrid');
    expect(newestMissing.knowledgeUpdate).toEqual({ n: 1, newestFirstRate: 0, nBoth: 0, newestAboveOlderRate: 0 });
  });

  it('counts an abstention question answered with no row, and keeps it out of recall', () => {
    const s = score([result(question('x_abs'), []), result(question('y_abs'), [2]), result(question(), [])], 'hybrid');
    expect(s.abstention).toEqual({ n: 2, emptyRate: 0.5, byType: { 'knowledge-update': { n: 2, emptyRate: 0.5 } } });
    expect(s.answerable.n).toBe(1);
    expect(s.answerable.emptyRate).toBe(1);
  });
});
