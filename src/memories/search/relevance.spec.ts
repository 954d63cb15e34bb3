import type { MemoryRow, SearchCandidate, SearchCandidates } from '../../backends/ports/memory.model';
import { rankCandidates, RELEVANCE } from './relevance';

/** A hybrid candidate holding `words` of the query "harbour lantern", with its cosine to the query (a conversation turn: the scale's own kind). */
function candidate(id: string, words: string[], cosine: number, type: MemoryRow['type'] = 'conversation'): SearchCandidate {
  const at = new Date('2026-01-05T10:00:00Z');
  const row = { id, namespace: 'default', title: null, type, scope: 'global', tags: [], agent: null, project: null, snippet: '', createdAt: at, updatedAt: at, version: 1 } as MemoryRow;
  return { row, cosine, semantic: true, keyword: words.length || undefined, words, phrases: [], length: 80, neighbours: [] };
}
// Each query word is held by 14 of 100 memories: one of the two words is a keyword signal of ~0.42.
const set = (...list: SearchCandidate[]): SearchCandidates => ({
  list,
  docs: 100,
  df: [
    ['harbour', 14],
    ['lantern', 14],
  ],
});
const rank = (s: SearchCandidates, floor = RELEVANCE.FLOOR) => rankCandidates(s, { mode: 'hybrid', text: 'harbour lantern', floor }).then((r) => r.rows);
const ids = (rows: Array<{ row: { id: string } }>) => rows.map((r) => r.row.id);

describe('hybrid relevance when nothing is close in meaning (decision 0162)', () => {
  it('does not answer on one shared everyday word when no candidate is close in meaning', async () => {
    // Cosine 0.6 is what unrelated text of the same kind scores: S 0.17 for every candidate.
    expect(await rank(set(candidate('shares-a-word', ['harbour'], 0.6), candidate('unrelated', [], 0.58)))).toEqual([]);
  });

  it('answers on the same word when another memory is close in meaning (the meaning of the store is not absent)', async () => {
    const ranked = await rank(set(candidate('shares-a-word', ['harbour'], 0.6), candidate('close', [], 0.7)));
    expect(ids(ranked).sort()).toEqual(['close', 'shares-a-word']);
    expect(ranked.every((r) => !('no_close_meaning' in r.explain.signals))).toBe(true);
  });

  it("still answers with a memory holding the query's words, and explain says why its meaning did not count", async () => {
    const [row, ...rest] = await rank(set(candidate('both-words', ['harbour', 'lantern'], 0.6), candidate('unrelated', [], 0.6)));
    expect(row.row.id).toBe('both-words');
    expect(rest).toEqual([]);
    expect(row.explain.semantic).toBe(0);
    expect(row.explain.cosine).toBe(0.6);
    expect(row.explain.signals).toEqual({ no_close_meaning: -RELEVANCE.NO_MEANING_PENALTY });
    expect(row.score).toBeCloseTo(row.explain.keyword - RELEVANCE.NO_MEANING_PENALTY, 3);
  });

  it('shows every candidate with min_score 0', async () => {
    expect(ids(await rank(set(candidate('shares-a-word', ['harbour'], 0.6), candidate('unrelated', [], 0.58)), 0)).sort()).toEqual(['shares-a-word', 'unrelated']);
  });
});

describe("a model's own cosine scale (decision 0172)", () => {
  it('maps cosines by the scale the model states, so a model whose cosines run high does not make every memory relevant', async () => {
    const list = [candidate('match', [], 0.9), candidate('unrelated', [], 0.8)];
    const byDefault = await rankCandidates(set(...list), { mode: 'semantic', text: 'harbour lantern', floor: RELEVANCE.FLOOR });
    expect(ids(byDefault.rows)).toEqual(['match', 'unrelated']); // bge's scale: both cosines are past 0.85
    const e5 = await rankCandidates(set(...list), { mode: 'semantic', text: 'harbour lantern', floor: RELEVANCE.FLOOR, scale: { zero: 0.79, one: 0.92 } });
    expect(ids(e5.rows)).toEqual(['match']);
    expect(e5.rows[0].explain.semantic).toBeCloseTo((0.9 - 0.79) / (0.92 - 0.79), 4);
    expect(e5.bestBelowFloor).toBeCloseTo((0.8 - 0.79) / (0.92 - 0.79), 3);
  });
});

describe('independent notes on the scale of conversation turns (decision 0173)', () => {
  it('lifts the meaning of a memory that is not a conversation turn by NOTE_LIFT', async () => {
    // Cosine 0.64: S 0.3 for a turn (below the floor), 0.5 for a note.
    const list = [candidate('turn', [], 0.64), candidate('note', [], 0.64, 'note'), candidate('fact', [], 0.64, 'fact')];
    const ranked = await rankCandidates(set(...list), { mode: 'semantic', text: 'harbour lantern', floor: RELEVANCE.FLOOR });
    expect(ids(ranked.rows).sort()).toEqual(['fact', 'note']);
    expect(ranked.rows[0].explain.semantic).toBeCloseTo((0.64 - RELEVANCE.COSINE_ZERO) / (RELEVANCE.COSINE_ONE - RELEVANCE.COSINE_ZERO) + RELEVANCE.NOTE_LIFT, 4);
    expect(ranked.bestBelowFloor).toBeCloseTo(0.3, 3);
  });

  it('leaves a note that only shares a subject out', async () => {
    // What the notes set's questions about absent things score against their nearest note (bench/notes-paraphrase.json): 0.41–0.58.
    expect((await rank(set(candidate('same-subject', [], 0.58, 'note'), candidate('other', [], 0.5, 'note')))).length).toBe(0);
  });
});

describe('how close the memories left out by the floor came', () => {
  const rankAt = (floor: number, ...list: SearchCandidate[]) => rankCandidates(set(...list), { mode: 'semantic', text: 'harbour lantern', floor });

  it('gives the best score below the floor, and that value as min_score lets exactly that memory in', async () => {
    // Semantic: S = (cosine - 0.55) / 0.3, so 0.6499 scores 0.333 (below 0.4), 0.61 scores 0.2 and 0.8 scores 0.833.
    const list = [candidate('near', [], 0.6499), candidate('far', [], 0.61), candidate('answer', [], 0.8)];
    const ranked = await rankAt(RELEVANCE.FLOOR, ...list);
    expect(ids(ranked.rows)).toEqual(['answer']);
    expect(ranked.bestBelowFloor).toBeCloseTo(0.333, 3);
    expect(ranked.bestBelowFloor).toBeLessThan(RELEVANCE.FLOOR);
    const retried = await rankAt(ranked.bestBelowFloor as number, ...list);
    expect(ids(retried.rows)).toEqual(['answer', 'near']);
  });

  it('is null when the floor left nothing out, and 0 when nothing came close at all', async () => {
    expect((await rankAt(0, candidate('far', [], 0.5))).bestBelowFloor).toBeNull();
    expect((await rankAt(RELEVANCE.FLOOR, candidate('answer', [], 0.8))).bestBelowFloor).toBeNull();
    expect((await rankAt(RELEVANCE.FLOOR)).bestBelowFloor).toBeNull();
    expect((await rankAt(RELEVANCE.FLOOR, candidate('far', [], 0.3))).bestBelowFloor).toBe(0);
  });
});

describe('hybrid relevance of a comparison question (decision 0164)', () => {
  const question = 'Which did I visit first, the harbour museum or the lantern festival?';
  // Each side's own words are rare (3 of 100 memories); the head's "visit" is everyday, "first" common.
  const compared = (...list: SearchCandidate[]): SearchCandidates => ({
    list,
    docs: 100,
    df: [
      ['visit', 20],
      ['first', 30],
      ['harbour', 3],
      ['museum', 3],
      ['lantern', 3],
      ['festival', 3],
    ],
  });
  const rankQ = (s: SearchCandidates, text = question) => rankCandidates(s, { mode: 'hybrid', text, floor: RELEVANCE.FLOOR }).then((r) => r.rows);

  it('answers with the memory of each side, though each holds only part of the question', async () => {
    const s = compared(candidate('museum', ['visit', 'harbour', 'museum'], 0.5), candidate('festival', ['lantern', 'festival'], 0.5), candidate('visits', ['visit', 'first'], 0.5));
    const ranked = await rankQ(s);
    expect(ids(ranked).sort()).toEqual(['festival', 'museum']);
    expect(ranked.every((r) => r.explain.signals.comparison_side > 0)).toBe(true);
    // Asked as one plain list of the same words, neither memory is an answer.
    expect(await rankQ(s, 'visit first harbour museum lantern festival')).toEqual([]);
  });

  it("does not answer on the question's head alone", async () => {
    const [row] = (await rankCandidates(compared(candidate('visits', ['visit', 'first'], 0.5)), { mode: 'hybrid', text: question, floor: 0 })).rows;
    expect(row.explain.signals).not.toHaveProperty('comparison_side');
  });
});

describe('hybrid: a question asking for a total gets one turn per conversation session first (decision 0165)', () => {
  const total = (s: SearchCandidates) => rankCandidates(s, { mode: 'hybrid', text: 'how many harbour lantern', floor: RELEVANCE.FLOOR }).then((r) => r.rows);
  /** A conversation turn written at `at` holding both query words, with its cosine. */
  const turn = (id: string, at: string, cosine: number, type: MemoryRow['type'] = 'conversation'): SearchCandidate => {
    const c = candidate(id, ['harbour', 'lantern'], cosine, type);
    return { ...c, row: { ...c.row, createdAt: new Date(at) } };
  };
  const may = (hhmm: string) => `2026-05-02T${hhmm}:00Z`;
  const june = (hhmm: string) => `2026-06-09T${hhmm}:00Z`;

  it("places the next session's best turn before a session's second, its score unchanged", async () => {
    const turns = set(turn('may-a', may('10:00'), 0.8), turn('may-b', may('10:01'), 0.78), turn('june', june('18:00'), 0.76));
    const ranked = await total(turns);
    expect(ids(ranked)).toEqual(['may-a', 'june', 'may-b']);
    expect(ids(await rank(turns))).toEqual(['may-a', 'may-b', 'june']); // a question that is not about a total: by score
    const second = ranked[2];
    expect(second.explain.signals.same_session).toBe(-RELEVANCE.SESSION_REPEAT);
    expect(second.score).toBeGreaterThan(ranked[1].score); // placed lower, scored as before
  });

  it('keeps the order of turns of one session, and of notes written in a row', async () => {
    expect(ids(await total(set(turn('a', may('10:00'), 0.8), turn('b', may('10:20'), 0.78), turn('c', may('10:45'), 0.76))))).toEqual(['a', 'b', 'c']);
    expect(ids(await total(set(turn('a', may('10:00'), 0.8, 'note'), turn('b', may('10:01'), 0.78, 'note'), turn('c', june('18:00'), 0.76, 'note'))))).toEqual(['a', 'b', 'c']);
  });
});

describe('hybrid: a long memory does not win on its length (decision 0169)', () => {
  const long = (id: string, words: string[], cosine: number, length: number): SearchCandidate => ({ ...candidate(id, words, cosine), length });

  it('places a short statement of the fact before a long text with the same words, and says what the length cost', async () => {
    const s = set(long('essay', ['harbour', 'lantern'], 0.72, 3000), candidate('statement', ['harbour', 'lantern'], 0.7));
    const ranked = await rank(s);
    expect(ids(ranked)).toEqual(['statement', 'essay']);
    expect(ranked[0].explain.signals).not.toHaveProperty('long_memory');
    expect(ranked[1].explain.signals.long_memory).toBeLessThan(0);
    expect(ids((await rankCandidates(s, { mode: 'semantic', text: 'harbour lantern', floor: 0 })).rows)).toEqual(['essay', 'statement']); // meaning alone: by cosine
  });

  it('costs nothing up to LONG_MEMORY characters and never more than the share LONG_MEMORY_MIN keeps', async () => {
    const [short] = await rank(set(long('a', ['harbour', 'lantern'], 0.7, RELEVANCE.LONG_MEMORY)));
    const [huge] = await rank(set(long('a', ['harbour', 'lantern'], 0.7, 1_000_000)));
    expect(short.explain.signals).not.toHaveProperty('long_memory');
    expect(huge.score).toBeCloseTo(1 - (1 - short.explain.keyword * RELEVANCE.LONG_MEMORY_MIN) * (1 - short.explain.semantic), 3);
  });

  it("still answers with a long memory holding the query's words when nothing is close in meaning", async () => {
    const ranked = await rank(set(long('manual', ['harbour', 'lantern'], 0.58, 50_000), candidate('unrelated', [], 0.58)));
    expect(ids(ranked)).toEqual(['manual']);
  });
});
