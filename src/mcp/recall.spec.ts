import type { MemoryDto } from '../memories/dto/memory-response.dto';
import { estimateTokens, noMatchNote, selectForBudget, taskQuery } from './recall';

function memory(id: string, content: string, title: string | null = null): MemoryDto {
  return {
    id,
    namespace: 'default',
    title,
    type: 'note',
    content,
    tags: [],
    scope: 'global',
    agent: null,
    project: null,
    created_at: '2026-11-01T00:00:00.000Z',
    updated_at: '2026-11-01T00:00:00.000Z',
    version: 1,
  };
}

function store(...items: MemoryDto[]) {
  const byId = new Map(items.map((m) => [m.id, m]));
  const loaded: string[] = [];
  return {
    ids: items.map((m) => m.id),
    loaded,
    load: async (id: string) => {
      loaded.push(id);
      return byId.get(id) ?? null;
    },
  };
}

describe('recall_context selection', () => {
  it('keeps memories in relevance order while they fit, and reports what it used', async () => {
    const s = store(memory('a', 'Deploys happen on Tuesdays.'), memory('b', 'The staging database is reset nightly.'));
    const out = await selectForBudget(s.ids, s.load, 2000);
    expect(out.memories.map((m) => m.id)).toEqual(['a', 'b']);
    expect(out.memories.every((m) => !m.truncated)).toBe(true);
    expect(out.leftOut).toBe(0);
    expect(out.tokensUsed).toBe(60 + out.memories.reduce((n, m) => n + estimateTokens(JSON.stringify(m)), 0));
  });

  it('drops near-duplicates (same words, other punctuation or case) but keeps memories that differ', async () => {
    const s = store(
      memory('a', 'We deploy on Tuesdays through the blue-green pipeline.', 'Deploys'),
      memory('b', 'we DEPLOY on tuesdays, through the blue green pipeline!', 'deploys'),
      memory('c', 'We deploy on Fridays through the blue-green pipeline.', 'Deploys'),
    );
    const out = await selectForBudget(s.ids, s.load, 2000);
    expect(out.memories.map((m) => m.id)).toEqual(['a', 'c']);
    expect(out.duplicates).toBe(1);
  });

  it('trims the memory that overflows the budget at a word boundary, marks it, and stops loading', async () => {
    const long = memory('b', `Runbook: ${'check the dashboards before every step of the rollout. '.repeat(100)}`);
    const s = store(memory('a', 'Short one.'), long, memory('c', 'Never loaded.'));
    const out = await selectForBudget(s.ids, s.load, 400);
    expect(out.memories.map((m) => [m.id, m.truncated])).toEqual([
      ['a', false],
      ['b', true],
    ]);
    const cut = out.memories[1].content;
    expect(cut.endsWith(' …')).toBe(true);
    expect(long.content.startsWith(cut.slice(0, -2))).toBe(true);
    expect(cut.slice(0, -2)).toMatch(/\S$/); // not cut inside a word's trailing space
    expect(out.tokensUsed).toBeLessThanOrEqual(400);
    expect(out.leftOut).toBe(1);
    expect(s.loaded).toEqual(['a', 'b']);
  });

  it('does not squeeze a sliver of a memory into a nearly spent budget', async () => {
    const s = store(memory('a', 'x '.repeat(300)), memory('b', 'y '.repeat(300)));
    const out = await selectForBudget(s.ids, s.load, 60 + estimateTokens(JSON.stringify({ ...memory('a', 'x '.repeat(300)), truncated: false })) + 20);
    expect(out.memories.map((m) => m.id)).toEqual(['a']);
    expect(out.leftOut).toBe(1);
  });

  it('counts the escaping of quotes and newlines against the budget', async () => {
    const s = store(memory('a', '"\n'.repeat(2000)));
    const out = await selectForBudget(s.ids, s.load, 300);
    expect(out.memories[0].truncated).toBe(true);
    expect(out.tokensUsed).toBeLessThanOrEqual(300);
    expect(60 + estimateTokens(JSON.stringify(out.memories[0]))).toBe(out.tokensUsed);
  });

  it('skips memories deleted since the search', async () => {
    const s = store(memory('a', 'Kept.'));
    const out = await selectForBudget(['gone', 'a'], s.load, 2000);
    expect(out.memories.map((m) => m.id)).toEqual(['a']);
  });

  it('turns a task into a plain word query: no phrase or exclusion operators, at most the query limit', () => {
    expect(taskQuery('Fix the "flaky" deploy -- see -staging notes', 1000)).toBe('Fix the flaky deploy see staging notes');
    expect(taskQuery('non-blocking io', 1000)).toBe('non-blocking io');
    const long = taskQuery(`${'word '.repeat(300)}`, 1000);
    expect(long.length).toBeLessThanOrEqual(1000);
    expect(long.endsWith('word')).toBe(true);
    expect(taskQuery('  "" - ', 1000)).toBe('');
  });
});

describe("recall_context's note when nothing cleared the floor", () => {
  it('says how close the best memory came and the min_score that would include it', () => {
    expect(noMatchNote(0.3312)).toBe(
      'No memory cleared the relevance floor; the closest scored 0.3312. Call again with min_score 0.3312 if a looser match helps. Try search_memories with other words, or list_recent.',
    );
  });

  it('says only that nothing matches when nothing came close, or the search had no floor (keyword mode)', () => {
    for (const none of [0, null, undefined]) expect(noMatchNote(none)).toBe('No memory matches this task. Try search_memories with other words, or list_recent.');
  });
});
