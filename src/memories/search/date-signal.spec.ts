import type { TimeRange } from '../../../libs/search-query';
import type { MemoryRow, SearchCandidate, SearchCandidates } from '../../backends/ports/memory.model';
import { dateSignal } from './date-signal';
import { rankCandidates } from './relevance';

const day = (iso: string) => new Date(`${iso}T00:00:00Z`);
const lastWeek: TimeRange = { start: day('2023-05-08').getTime(), end: day('2023-05-15').getTime(), strength: 1, text: 'last week' };

function candidate(id: string, created: string, cosine: number): SearchCandidate {
  const at = day(created);
  const row = { id, namespace: 'default', title: null, type: 'note', scope: 'global', tags: [], agent: null, project: null, snippet: '', createdAt: at, updatedAt: at, version: 1 } as MemoryRow;
  return { row, cosine, semantic: true, words: [], phrases: [], length: 80, neighbours: [] };
}
const set = (...list: SearchCandidate[]): SearchCandidates => ({ list, docs: 100, df: [] });
const rank = (s: SearchCandidates, time?: TimeRange) =>
  rankCandidates(s, { mode: 'semantic', text: 'what did I note last week', floor: 0.4, hooks: time ? { signals: [dateSignal(time)] } : undefined }).then((r) => r.rows);

describe('the date preference of a question (decision 0135) in the ranking', () => {
  it('ranks the memory of the named time above a slightly better one of another time', async () => {
    const s = set(candidate('other', '2023-01-02', 0.8), candidate('last-week', '2023-05-10', 0.79));
    expect((await rank(s)).map((r) => r.row.id)).toEqual(['other', 'last-week']);
    const ranked = await rank(s, lastWeek);
    expect(ranked.map((r) => r.row.id)).toEqual(['last-week', 'other']);
    expect(ranked[0].explain.signals).toHaveProperty('date_match');
  });

  it('is bounded: a far better match outside the range stays first', async () => {
    const ranked = await rank(set(candidate('best', '2023-01-02', 0.85), candidate('weak', '2023-05-10', 0.7)), lastWeek);
    expect(ranked.map((r) => r.row.id)).toEqual(['best', 'weak']);
  });

  it('never makes a memory an answer by itself: one below the floor stays out', async () => {
    expect(await rank(set(candidate('unrelated', '2023-05-10', 0.6)), lastWeek)).toEqual([]);
  });
});
