import Database from 'better-sqlite3';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { MemoryDoc, SearchQuery } from '../ports/memory.model';
import { wheelDoc } from '../../../test/support/word-wheel';
import { SqliteMemoryIndex } from './sqlite-memory-index';

/**
 * FTS5 segment maintenance (bench: ~15 segments at 100,000 memories made every term lookup
 * ~25 % slower). Merging must leave every search answer exactly as it was, and must run by
 * itself once writes pause.
 */
describe('SqliteMemoryIndex full-text segment maintenance', () => {
  const doc = (i: number): MemoryDoc =>
    wheelDoc(i, {
      idBase: 0x66000000,
      stride: 7,
      titleEvery: 5,
      content: (n, w) => `Note ${n}: the ${w(0)} and the ${w(3)} of memory ${n}; ${w(4)} later. ${'filler text '.repeat(n % 4)}`,
    });
  const queries: SearchQuery[] = [
    ...['deploy', 'cache schema', 'latency budget retry', '"the deploy"', 'token -queue', 'what about the index'].flatMap((text) => [
      { text, filter: { namespace: 'default' }, limit: 5, offset: 0 },
      { text, filter: { namespace: 'default' }, limit: 5, offset: 5 },
    ]),
    { text: 'backup', filter: { namespace: 'default', type: 'fact' }, limit: 10, offset: 0 },
  ];
  const answers = async (index: SqliteMemoryIndex) => Promise.all(queries.map((q) => index.search(q)));

  let dir: string;
  let db: Database.Database;
  let index: SqliteMemoryIndex;

  beforeEach(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'memstore-fts-'));
    db = new Database(path.join(dir, 'm.db'));
    db.pragma('journal_mode = WAL');
    // A small window so the windowed ranking (not only exact bm25) is exercised.
    index = new SqliteMemoryIndex(db, { termWindow: 20, exactRankingBudget: 30, maintenanceIdleMs: null });
    // One transaction per memory, as the API writes them: one new segment each.
    for (let i = 0; i < 120; i++) await index.insert(doc(i));
  });

  afterEach(() => {
    index.stopMaintenance();
    db.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('merges segments in bounded steps without changing any answer', async () => {
    const before = await answers(index);
    const segments = index.ftsSegments();
    expect(segments.fts).toBeGreaterThan(3);
    let steps = 0;
    while (index.maintainStep(1)) steps++;
    expect(steps).toBeGreaterThanOrEqual(1);
    const after = index.ftsSegments();
    expect(after.fts).toBeLessThan(segments.fts);
    expect(after.fts).toBeLessThanOrEqual(2);
    expect(after.titleTags).toBeLessThanOrEqual(2);
    expect(await answers(index)).toEqual(before);
    expect(index.maintainStep()).toBe(false); // nothing left to do
  });

  it('tidies up by itself once writes pause', async () => {
    const auto = new SqliteMemoryIndex(db, { termWindow: 20, exactRankingBudget: 30, maintenanceIdleMs: 20 });
    try {
      const before = await answers(auto);
      const segments = auto.ftsSegments().fts;
      await auto.insert(doc(500));
      const deadline = Date.now() + 5000;
      while (auto.ftsSegments().fts >= segments && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      expect(auto.ftsSegments().fts).toBeLessThan(segments);
      await auto.delete('default', doc(500).id);
      expect(await answers(auto)).toEqual(before);
    } finally {
      auto.stopMaintenance();
    }
  });
});
