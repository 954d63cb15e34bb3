import Database from 'better-sqlite3';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { memoryDoc } from '../../../test/contract/memory-index.contract';
import { SqliteMemoryIndex } from './sqlite-memory-index';

/** SQLite-specific behaviour beyond the MemoryIndex contract (which runs in test/contract). */
describe('SqliteMemoryIndex', () => {
  let db: Database.Database;
  beforeEach(() => {
    db = new Database(':memory:');
    db.pragma('foreign_keys = ON');
  });
  afterEach(() => db.close());

  describe('with a small term window (what happens to common words in a large store)', () => {
    it('ranks among the newest matches of a common word and estimates the total', async () => {
      const index = new SqliteMemoryIndex(db, { termWindow: 5 });
      for (let i = 0; i < 40; i++) await index.insert(memoryDoc({ content: `common word ${i}`, type: i % 2 ? 'fact' : 'note' }));
      const res = await index.search({ text: 'common', filter: { namespace: 'default' }, limit: 10, offset: 0 });
      expect(res.rows).toHaveLength(5); // the window
      expect(res.total).toBe(40); // scaled estimate: exact here because every row matches
      expect(res.reachable).toBe(5); // paging reaches the window only
      const newest = (await index.list({ filter: { namespace: 'default' }, limit: 5, offset: 0 })).rows.map((r) => r.id);
      expect(res.rows.map((r) => r.id)).toEqual(newest); // equal scores: newest first
    });

    it('keeps every match of a rare word, even an old one, and ranks it first', async () => {
      const index = new SqliteMemoryIndex(db, { termWindow: 5 });
      const rare = memoryDoc({ content: 'common and zeppelin' });
      await index.insert(rare);
      for (let i = 0; i < 30; i++) await index.insert(memoryDoc({ content: `common ${i}` }));
      const res = await index.search({ text: 'zeppelin common', filter: { namespace: 'default' }, limit: 3, offset: 0 });
      expect(res.rows[0].id).toBe(rare.id);
    });

    it('falls back to exact ranking when a filtered search needs more than the windows hold', async () => {
      const index = new SqliteMemoryIndex(db, { termWindow: 3 });
      const facts = [];
      for (let i = 0; i < 20; i++) {
        const d = memoryDoc({ content: `common ${i}`, type: i < 4 ? 'fact' : 'note' });
        await index.insert(d);
        if (d.type === 'fact') facts.push(d.id);
      }
      const res = await index.search({ text: 'common', filter: { namespace: 'default', type: 'fact' }, limit: 10, offset: 0 });
      expect(res.rows.map((r) => r.id).sort()).toEqual([...facts].sort());
      expect(res.total).toBe(4);
    });
  });

  it('upgrades a database created before the title/tags index and the running counts', async () => {
    const first = new SqliteMemoryIndex(db);
    const d = memoryDoc({ title: 'Zeppelin', content: 'common words', type: 'code', project: 'p' });
    await first.insert(d);
    await first.insert(memoryDoc({ content: 'zeppelin in the content only' }));
    db.exec(`DROP TRIGGER memories_tt_insert; DROP TRIGGER memories_tt_delete; DROP TRIGGER memories_tt_update; DROP TABLE memories_tt;
             DROP TRIGGER memory_counts_insert; DROP TRIGGER memory_counts_delete; DROP TRIGGER memory_counts_update; DROP TABLE memory_counts;`);
    const upgraded = new SqliteMemoryIndex(db);
    const res = await upgraded.search({ text: 'zeppelin', filter: { namespace: 'default' }, limit: 10, offset: 0 });
    expect(res.rows[0].id).toBe(d.id); // the title hit still weighs more
    const stats = await upgraded.stats('default');
    expect(stats.total).toBe(2);
    expect(stats.byType.code).toBe(1);
    expect(stats.byProject).toEqual({ p: 1, '(none)': 1 });
  });

  it('upgrades full-text indexes from before the namespace token: rebuilt once, then each namespace is matched through its own entries', async () => {
    const first = new SqliteMemoryIndex(db);
    const a = memoryDoc({ namespace: 'acme/a-1.x', content: 'zeppelin over acme' });
    const d = memoryDoc({ content: 'zeppelin over default' });
    await first.insertMany([a, d]);
    // The layout of the version before (decision 0152): no token column, indexes of the text alone.
    db.exec(`DROP TRIGGER memories_fts_insert; DROP TRIGGER memories_fts_delete; DROP TRIGGER memories_fts_update;
             DROP TRIGGER memories_tt_insert; DROP TRIGGER memories_tt_delete; DROP TRIGGER memories_tt_update;
             DROP TABLE memories_fts; DROP TABLE memories_tt; ALTER TABLE memories DROP COLUMN fts_ns;
             CREATE VIRTUAL TABLE memories_fts USING fts5 (title, tag_text, content, content = 'memories', content_rowid = 'seq', tokenize = 'porter unicode61 remove_diacritics 2');
             CREATE VIRTUAL TABLE memories_tt USING fts5 (title, tag_text, content = 'memories', content_rowid = 'seq', tokenize = 'porter unicode61 remove_diacritics 2');
             INSERT INTO memories_fts (memories_fts) VALUES ('rebuild'); INSERT INTO memories_tt (memories_tt) VALUES ('rebuild');`);
    const upgraded = new SqliteMemoryIndex(db);
    const token = `n${Buffer.from('acme/a-1.x').toString('hex')}0`;
    for (const t of ['memories_fts', 'memories_tt']) expect(db.prepare(`SELECT rowid FROM ${t} WHERE ${t} MATCH ?`).pluck().all(`fts_ns : "${token}"`)).toHaveLength(1);
    for (const [ns, doc] of [
      ['acme/a-1.x', a],
      ['default', d],
    ] as const)
      expect((await upgraded.search({ text: 'zeppelin', filter: { namespace: ns }, limit: 10, offset: 0 })).rows.map((r) => r.id)).toEqual([doc.id]);
    const schemaVersion = db.pragma('schema_version', { simple: true }) as number;
    new SqliteMemoryIndex(db);
    expect(db.pragma('schema_version', { simple: true })).toBe(schemaVersion); // once
  });

  it('upgrades vectors stored before their session link: each gets the memory before it, and a deletion re-embeds the one after', async () => {
    const first = new SqliteMemoryIndex(db);
    await first.useVectorSpace('test:2');
    const at = Date.UTC(2026, 0, 1);
    const [a, b, c] = [0, 1, 2].map((i) => memoryDoc({ content: `turn ${i}`, type: 'conversation', project: 'p', agent: 'x', createdAt: new Date(at + i * 60_000) }));
    await first.insertMany([a, b, c]);
    for (const job of await first.claimEmbeddingJobs('spec', 10, 60_000)) await first.storeVector(job, 'test:2', Float32Array.of(1, 0));
    // The layout of the version before: no prev, and a delete trigger that re-queues nothing.
    db.exec(`DROP TRIGGER embedding_forget_delete; DROP TRIGGER embedding_enqueue_move; DROP INDEX memory_vectors_prev; ALTER TABLE memory_vectors DROP COLUMN prev;
             CREATE TRIGGER embedding_forget_delete AFTER DELETE ON memories BEGIN
               DELETE FROM embedding_queue WHERE seq = old.seq; DELETE FROM memory_vectors WHERE seq = old.seq; END;`);
    const upgraded = new SqliteMemoryIndex(db);
    const seq = (id: string) => db.prepare('SELECT seq FROM memories WHERE id = ?').pluck().get(id) as number;
    const prevs = db.prepare('SELECT seq, prev FROM memory_vectors ORDER BY seq').all();
    expect(prevs).toEqual([
      { seq: seq(a.id), prev: null },
      { seq: seq(b.id), prev: seq(a.id) },
      { seq: seq(c.id), prev: seq(b.id) },
    ]);
    expect(await upgraded.embeddingProgress('test:2')).toMatchObject({ pending: 0 });
    await upgraded.delete('default', b.id);
    const jobs = await upgraded.claimEmbeddingJobs('spec', 10, 60_000);
    expect(jobs.map((j) => j.text)).toEqual(['turn 2\nturn 0']);
  });

  it("replaces a trigger whose body an earlier version wrote differently, drops one on its tables it no longer has, and leaves an up-to-date file and others' triggers alone", async () => {
    const first = new SqliteMemoryIndex(db);
    await first.insert(memoryDoc({ type: 'fact' }));
    const schemaVersion = () => db.pragma('schema_version', { simple: true }) as number;
    const unchanged = schemaVersion();
    new SqliteMemoryIndex(db);
    expect(schemaVersion()).toBe(unchanged); // reopening an up-to-date file writes no schema

    // An earlier body of a trigger (counts only 'note'), a trigger this version does not have on
    // its table (it would fail every insert), and an operator's own table with its trigger.
    db.exec(`DROP TRIGGER memory_counts_insert;
             CREATE TRIGGER memory_counts_insert AFTER INSERT ON memories WHEN new.type = 'note' BEGIN
               INSERT INTO memory_counts (dim, key, n) VALUES ('type', new.type, 1) ON CONFLICT (dim, key) DO UPDATE SET n = n + 1; END;
             CREATE TRIGGER memories_gone_since AFTER INSERT ON memories BEGIN SELECT RAISE(ABORT, 'stale trigger'); END;
             CREATE TABLE operator_log (at INTEGER);
             CREATE TRIGGER operator_log_insert AFTER INSERT ON operator_log BEGIN SELECT 1; END;`);
    const upgraded = new SqliteMemoryIndex(db);
    await upgraded.insert(memoryDoc({ type: 'fact' }));
    expect((await upgraded.stats('default')).byType.fact).toBe(2);
    const triggers = db.prepare("SELECT name FROM sqlite_master WHERE type = 'trigger'").pluck().all() as string[];
    expect(triggers).not.toContain('memories_gone_since');
    expect(triggers).toContain('operator_log_insert');
  });

  it('upgrades the tag table of an older layout (tag, seq) and keeps tag filters working', async () => {
    const first = new SqliteMemoryIndex(db);
    const a = memoryDoc({ tags: ['x', 'y'] });
    const b = memoryDoc({ tags: ['y'] });
    await first.insert(a);
    await first.insert(b);
    db.exec(`DROP TABLE memory_tags;
             CREATE TABLE memory_tags (tag TEXT NOT NULL, seq INTEGER NOT NULL REFERENCES memories (seq) ON DELETE CASCADE, PRIMARY KEY (tag, seq)) WITHOUT ROWID;
             CREATE INDEX memory_tags_seq ON memory_tags (seq);`);
    const upgraded = new SqliteMemoryIndex(db);
    const ids = async (tags: string[]) => (await upgraded.list({ filter: { namespace: 'default', tags }, limit: 10, offset: 0 })).rows.map((r) => r.id);
    expect(await ids(['y'])).toEqual([b.id, a.id]);
    expect(await ids(['x', 'y'])).toEqual([a.id]);
  });

  it('upgrades a tag table without the filter columns in place and pages tag + column filters from it', async () => {
    const first = new SqliteMemoryIndex(db);
    const a = memoryDoc({ tags: ['x'], type: 'fact', project: 'p' });
    const b = memoryDoc({ tags: ['x', 'y'], type: 'fact', project: 'q' });
    const c = memoryDoc({ tags: ['x'], type: 'note', project: 'p' });
    for (const d of [a, b, c]) await first.insert(d);
    // The layout before the filter columns (tag, created_at, id, seq).
    db.exec(`DROP TABLE memory_tags;
             CREATE TABLE memory_tags (tag TEXT NOT NULL, created_at INTEGER NOT NULL, id TEXT NOT NULL,
               seq INTEGER NOT NULL REFERENCES memories (seq) ON DELETE CASCADE, PRIMARY KEY (tag, created_at, id)) WITHOUT ROWID;
             CREATE INDEX memory_tags_by_memory ON memory_tags (seq, tag);
             INSERT INTO memory_tags SELECT j.value, m.created_at, m.id, m.seq FROM memories m, json_each(m.tags) j;`);
    const upgraded = new SqliteMemoryIndex(db);
    const page = (filter: object) => upgraded.list({ filter: { namespace: 'default', ...filter }, limit: 10, offset: 0 });
    expect((await page({ tags: ['x'], type: 'fact' })).rows.map((r) => r.id)).toEqual([b.id, a.id]);
    expect(await page({ tags: ['x'], project: 'p' })).toMatchObject({ total: 2, rows: [{ id: c.id }, { id: a.id }] });
    expect(await page({ tags: ['y', 'x'], type: 'fact', project: 'q' })).toMatchObject({ total: 1, rows: [{ id: b.id }] });
  });

  it('answers every combination of filters as a plain filter of all memories would, also after writes change them', async () => {
    const index = new SqliteMemoryIndex(db);
    // A small deterministic corpus where each filter value is shared by many memories.
    let r = 7;
    const rnd = (n: number) => (r = (r * 1103515245 + 12345) % 2147483648) % n;
    const types = ['fact', 'note', 'decision'] as const;
    const scopes = ['global', 'project'] as const;
    const agents = [null, 'a1', 'a2'];
    const projects = [null, 'p1', 'p2'];
    const tagPool = ['t1', 't2', 't3'];
    const docs = Array.from({ length: 120 }, () =>
      memoryDoc({
        type: types[rnd(3)],
        scope: scopes[rnd(2)],
        agent: agents[rnd(3)],
        project: projects[rnd(3)],
        tags: tagPool.filter(() => rnd(2) === 0),
      }),
    );
    for (const d of docs) await index.insert(d);
    // Writes that move memories between filters: their tag rows must follow.
    for (let i = 0; i < docs.length; i += 5) {
      docs[i] = { ...docs[i], type: types[rnd(3)], project: projects[rnd(3)], agent: agents[rnd(3)], tags: tagPool.filter(() => rnd(2) === 0), version: 2 };
      await index.replace(docs[i]);
    }
    const newestFirst = [...docs].sort((x, y) => y.createdAt.getTime() - x.createdAt.getTime() || (x.id < y.id ? 1 : -1));
    const filters: Array<Record<string, unknown>> = [];
    for (const type of [undefined, 'fact'])
      for (const scope of [undefined, 'project'])
        for (const agent of [undefined, 'a1']) for (const project of [undefined, 'p2']) for (const tags of [undefined, ['t1'], ['t2', 't3']]) filters.push({ type, scope, agent, project, tags });
    for (const f of filters) {
      const filter = Object.fromEntries(Object.entries(f).filter(([, v]) => v !== undefined));
      const want = newestFirst.filter(
        (d) =>
          (f.type === undefined || d.type === f.type) &&
          (f.scope === undefined || d.scope === f.scope) &&
          (f.agent === undefined || d.agent === f.agent) &&
          (f.project === undefined || d.project === f.project) &&
          ((f.tags as string[] | undefined) ?? []).every((t) => d.tags.includes(t)),
      );
      const first = await index.list({ filter: { namespace: 'default', ...filter }, limit: 4, offset: 0 });
      expect({ filter, total: first.total, ids: first.rows.map((x) => x.id) }).toEqual({ filter, total: want.length, ids: want.slice(0, 4).map((d) => d.id) });
      if (want.length > 4) {
        const last = first.rows[first.rows.length - 1];
        const next = await index.list({ filter: { namespace: 'default', ...filter }, limit: 4, offset: 0, after: { createdAt: last.createdAt, id: last.id } });
        expect({ filter, ids: next.rows.map((x) => x.id) }).toEqual({ filter, ids: want.slice(4, 8).map((d) => d.id) });
      }
    }
  });

  it('reports a closed database as 503 Document database unavailable', async () => {
    const index = new SqliteMemoryIndex(db);
    db.close();
    await expect(index.count('default')).rejects.toMatchObject({ status: 503, message: expect.stringMatching(/^Document database unavailable: /) });
    db = new Database(':memory:'); // for afterEach
  });

  describe('group commit: creates that reach the index in one turn of the event loop', () => {
    const ids = async (index: SqliteMemoryIndex) => (await index.list({ filter: { namespace: 'default' }, limit: 100, offset: 0 })).rows.map((r) => r.id).sort();
    /** A database file (WAL pages and closing need one; the other tests use memory). */
    let dir: string;
    beforeEach(() => (dir = fs.mkdtempSync(path.join(os.tmpdir(), 'memstore-group-commit-'))));
    afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

    it('share one commit: far fewer WAL pages than committing each create alone', async () => {
      const file = new Database(path.join(dir, 'memstore.db'));
      try {
        file.pragma('journal_mode = WAL');
        file.pragma('wal_autocheckpoint = 0');
        const index = new SqliteMemoryIndex(file, { maintenanceIdleMs: null });
        const doc = (i: number) => memoryDoc({ content: `memory number ${i} about rivers`, tags: ['alpha', 'beta'], type: 'fact', project: 'p' });
        for (let i = 0; i < 40; i++) await index.insert(doc(i));
        const walPages = () => (file.pragma('wal_checkpoint(PASSIVE)') as Array<{ log: number }>)[0].log;
        file.pragma('wal_checkpoint(TRUNCATE)');
        for (let i = 0; i < 8; i++) await index.insert(doc(i)); // one at a time: eight commits
        const apart = walPages();
        file.pragma('wal_checkpoint(TRUNCATE)');
        await Promise.all(Array.from({ length: 8 }, (_, i) => index.insert(doc(i)))); // together: one
        const together = walPages();
        expect(together).toBeLessThan(apart / 3);
        expect(await index.count('default')).toBe(56);
      } finally {
        file.close();
      }
    });

    it('fail a refused create alone: the others of its commit are written', async () => {
      const index = new SqliteMemoryIndex(db);
      const taken = memoryDoc();
      await index.insert(taken);
      const [a, b] = [memoryDoc(), memoryDoc()];
      const results = await Promise.allSettled([index.insert(a), index.insert({ ...taken }), index.insert(b)]);
      expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
      expect((results[1] as PromiseRejectedResult).reason).toMatchObject({ status: 409 });
      expect(await ids(index)).toEqual([taken.id, a.id, b.id].sort());
    });

    it('fail together when an error ends the whole transaction, and none of them is written', async () => {
      const index = new SqliteMemoryIndex(db);
      const before = memoryDoc();
      await index.insert(before);
      // RAISE(ROLLBACK) ends the transaction itself, as an I/O error or a full disk can.
      db.exec(`CREATE TEMP TRIGGER boom BEFORE INSERT ON memories WHEN new.title = 'boom' BEGIN SELECT RAISE(ROLLBACK, 'boom'); END`);
      const results = await Promise.allSettled([index.insert(memoryDoc()), index.insert(memoryDoc({ title: 'boom' })), index.insert(memoryDoc())]);
      expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected', 'rejected']);
      expect(await ids(index)).toEqual([before.id]); // no create answered as failed is in the index
      const after = memoryDoc();
      await index.insert(after);
      expect(await ids(index)).toEqual([before.id, after.id].sort());
    });

    it('are committed before the database closes (a create in flight at shutdown is kept)', async () => {
      const file = new Database(path.join(dir, 'memstore.db'));
      const index = new SqliteMemoryIndex(file);
      const late = memoryDoc();
      const writtenLate = index.insert(late);
      index.stopMaintenance(); // what SqliteDocumentDatabase.close() does before closing the file
      file.close();
      await expect(writtenLate).resolves.toBeUndefined();
      const reopened = new Database(path.join(dir, 'memstore.db'));
      expect(reopened.prepare('SELECT id FROM memories').pluck().all()).toEqual([late.id]);
      reopened.close();
    });
  });
});
