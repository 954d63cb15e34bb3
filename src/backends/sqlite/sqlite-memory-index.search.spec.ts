import Database from 'better-sqlite3';
import { MemoryDoc } from '../ports/memory.model';
import { SqliteMemoryIndex } from './sqlite-memory-index';
import { StatementCache } from './sqlite-memory-rows';
import { rankedFullTextSearch, rankedFullTextSeqs } from './sqlite-ranking';

/**
 * Search paths changed for speed (bench): count/rank without the join when there is no filter,
 * and snippets computed on a scratch FTS5 table holding only the page. These pin what must not
 * change: the same rows, order and scores with and without the join, and each row's snippet
 * taken from that row (a single-row page used to get another memory's passage, because
 * better-sqlite3 binds numbers as REAL and FTS5 ignores a REAL `rowid = ?` next to MATCH).
 */
describe('SqliteMemoryIndex search (pages and snippets)', () => {
  let db: Database.Database;
  let index: SqliteMemoryIndex;
  const filler = (n: number, word: string) => Array.from({ length: n }, (_, i) => `${word}${i % 7} lorem ipsum dolor.`).join(' ');

  const doc = (i: number, content: string, extra: Partial<MemoryDoc> = {}): MemoryDoc => {
    const at = new Date(Date.UTC(2026, 0, 1, 0, 0, i));
    return {
      id: (0x65000000 + i).toString(16).padStart(8, '0') + '0'.repeat(16),
      namespace: 'default',
      title: null,
      type: 'note',
      scope: 'global',
      tags: [],
      agent: null,
      project: null,
      content,
      createdAt: at,
      updatedAt: at,
      version: 1,
      objectKey: null,
      author: null,
      ...extra,
    };
  };

  beforeEach(async () => {
    db = new Database(':memory:');
    index = new SqliteMemoryIndex(db);
    // Each memory has its own marker word next to the searched word, deep inside its content.
    for (let i = 0; i < 30; i++) {
      await index.insert(doc(i, `${filler(40, 'pad')} The quota for marker${i} was raised. ${filler(40, 'tail')}`, { type: i % 2 ? 'fact' : 'note' }));
    }
    await index.insert(doc(99, `${filler(30, 'pad')} Restarted the workers of the service on Fridays. ${filler(30, 'end')}`, { title: 'Release habits' }));
  });

  afterEach(() => db.close());

  it('gives every row its own snippet, on single-row pages too', async () => {
    for (const [limit, offset] of [
      [1, 0],
      [1, 7],
      [1, 29],
      [3, 5],
      [20, 0],
      [20, 20],
    ]) {
      const page = await index.search({ text: 'quota', filter: { namespace: 'default' }, limit, offset });
      expect(page.total).toBe(30);
      expect(page.rows.length).toBe(Math.min(limit, 30 - offset));
      for (const row of page.rows) {
        const i = parseInt(row.id.slice(0, 8), 16) - 0x65000000;
        expect(row.snippet).toContain(`quota for marker${i} was raised`);
      }
    }
    const filtered = await index.search({ text: 'quota', filter: { namespace: 'default', type: 'fact' }, limit: 1, offset: 4 });
    const i = parseInt(filtered.rows[0].id.slice(0, 8), 16) - 0x65000000;
    expect(filtered.rows[0].snippet).toContain(`marker${i} `);
  });

  it('ranks the same with and without a filter that keeps every row', async () => {
    const plain = await index.search({ text: 'quota marker3 raised', filter: { namespace: 'default' }, limit: 10, offset: 0 });
    const joined = await index.search({ text: 'quota marker3 raised', filter: { namespace: 'default', since: new Date(0) }, limit: 10, offset: 0 });
    expect(plain.total).toBe(30);
    expect(joined).toEqual(plain);
    expect(plain.rows[0].id).toBe(doc(3, '').id); // the only row with all three words
    expect(plain.rows[0].score).toBeGreaterThan(plain.rows[1].score as number);
  });

  it('stems in the snippet as in the match (restart finds Restarted)', async () => {
    const page = await index.search({ text: 'restart', filter: { namespace: 'default' }, limit: 5, offset: 0 });
    expect(page.rows.map((r) => r.title)).toEqual(['Release habits']);
    expect(page.rows[0].snippet).toContain('Restarted the workers of the service on Fridays');
  });

  it("gives hybrid search's keyword list the page's own memories and scores, on both ranking paths", () => {
    const statements = new StatementCache(db);
    const stmt = (sql: string) => statements.get(sql);
    const seqOf = new Map((db.prepare('SELECT id, seq FROM memories').all() as Array<{ id: string; seq: number }>).map((r) => [r.id, r.seq]));
    // bm25 over every match (the defaults, 31 memories), and the term windows (5 rows a term).
    for (const ranking of [
      { termWindow: 500, exactRankingBudget: 2000 },
      { termWindow: 5, exactRankingBudget: 1 },
    ]) {
      for (const [text, filter, limit, offset] of [
        ['quota marker3 raised', {}, 10, 0],
        ['quota', { type: 'fact' }, 5, 2],
        ['quota lorem', {}, 4, 3],
        ['workers restart -quota', {}, 10, 0],
        ['"was raised" marker7', {}, 10, 0],
        ['nothing-like-it', {}, 10, 0],
      ] as const) {
        const query = { text, filter: { namespace: 'default', ...filter }, limit, offset };
        const page = rankedFullTextSearch(stmt, ranking, query);
        const seqs = rankedFullTextSeqs(stmt, ranking, query);
        expect(seqs).toEqual(page.rows.map((r) => ({ seq: seqOf.get(r.id), score: r.score })));
        if (text !== 'nothing-like-it') expect(seqs.length).toBeGreaterThan(0);
      }
    }
  });

  it('searches a namespace among others through its own full-text entries only, finding what it finds alone (decision 0152)', async () => {
    const alone = async (text: string) => index.search({ text, filter: { namespace: 'default' }, limit: 50, offset: 0 });
    const before = await Promise.all(['quota', 'quota marker3 raised', '"workers of the service"', 'quota -marker4'].map(alone));
    // The same memories again in two other namespaces, and the first set moved to its own.
    for (const ns of ['acme/x', 'acme/y']) {
      for (let i = 0; i < 30; i++) await index.insert(doc(1000 * (ns === 'acme/x' ? 1 : 2) + i, `${filler(40, 'pad')} The quota for marker${i} was raised. ${filler(40, 'tail')}`, { namespace: ns }));
    }
    const ids = (p: { rows: Array<{ id: string }> }) => p.rows.map((r) => r.id).sort();
    for (const [k, text] of ['quota', 'quota marker3 raised', '"workers of the service"', 'quota -marker4'].entries()) {
      const page = await alone(text);
      expect([page.total, ids(page)]).toEqual([before[k].total, ids(before[k])]);
      const x = await index.search({ text, filter: { namespace: 'acme/x' }, limit: 50, offset: 0 });
      expect(x.rows.every((r) => r.namespace === 'acme/x')).toBe(true);
      expect(x.total).toBe(text.startsWith('"') ? 0 : before[k].rows.filter((r) => r.id !== doc(99, '').id).length);
    }
    // Each namespace's memories carry its token in the index ('default' none: its index is as before namespaces).
    const token = `n${Buffer.from('acme/y').toString('hex')}0`;
    const tokened = (tok: string) => db.prepare('SELECT count(*) FROM memories_fts WHERE memories_fts MATCH ?').pluck().get(`fts_ns : "${tok}"`);
    expect([tokened(token), tokened(`n${Buffer.from('acme/x').toString('hex')}0`), tokened(`n${Buffer.from('default').toString('hex')}0`)]).toEqual([30, 30, 0]);
    // A word that is another namespace's token finds nothing.
    for (const ns of ['acme/x', 'default']) expect((await index.search({ text: token, filter: { namespace: ns }, limit: 5, offset: 0 })).total).toBe(0);
  });
});
